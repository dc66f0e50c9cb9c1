"""cocotb testbenches, drivers, monitors and the Verilator runner."""
