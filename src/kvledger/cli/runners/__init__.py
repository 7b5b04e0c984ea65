"""Use cases the commands run: a simulation, its what-ifs, plans per engine."""
