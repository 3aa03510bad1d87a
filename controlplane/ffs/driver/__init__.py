"""One Driver interface (base.py) and the BF-Runtime gRPC target (bfrt.py); the software switch's
drivers are `ffs.switch.driver`, the values they exchange `ffs.entries`."""
