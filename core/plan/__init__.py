"""Planning: one deployment's breakdown, frontier and what-ifs (`planning`), and accelerators compared for a purchase (`purchase`)."""
