"""Layer 6: many runs - scenario grids, the sweep cache and executors, the one worker pool and progress
interface, the decision-table builder, the layout advisor, and ``run`` (one scenario, table included)."""
