"""Units every layer shares. A leaf: imports nothing of the package."""

# Bytes in a GiB over bytes in a GB (2**30 / 10**9): GB/s ÷ this = GiB/s, as XProf's tables
# show bandwidths.
GIB_PER_GB = 1.073741824
