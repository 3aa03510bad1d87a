"""ffs-tofino: FFS (Fractional Fair Shares) for Intel Tofino, control plane and software switch."""

__version__ = "0.1.0"
