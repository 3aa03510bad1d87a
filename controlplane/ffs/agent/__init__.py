"""ffs-agent: owns one switch; programs it, keeps tau per egress, applies fairness matrices."""
