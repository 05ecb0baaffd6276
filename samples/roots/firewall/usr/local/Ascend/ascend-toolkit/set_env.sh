# CANN environment (emulated)
