"""One Driver interface (base.py), two targets: BF-Runtime gRPC (bfrt.py) and the software switch (model.py)."""

from ffs.driver.base import (  # noqa: F401
    CounterValue,
    Driver,
    DriverError,
    Exact,
    LpfSpec,
    Lpm,
    Range,
    TableEntry,
    Ternary,
    Update,
)
