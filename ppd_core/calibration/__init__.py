"""Layer 7: the simulator against measured data - reading the measured CSVs, validation, calibration."""
