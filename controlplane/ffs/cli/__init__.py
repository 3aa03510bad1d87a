"""Command-line entry points: ffs-sim, ffs-switch, ffs-agent, ffsctl."""
