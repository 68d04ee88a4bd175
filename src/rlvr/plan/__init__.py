"""`rlvr plan`: the validated recipe (variants, warnings), the memory planner and the launch plans."""
