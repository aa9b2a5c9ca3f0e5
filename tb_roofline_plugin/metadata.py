"""What the plugin is called and what it serves, in one place for the loader, the plugin, the
service and the command line. A leaf: imports nothing."""

PLUGIN_NAME = "roofline"  # TensorBoard's name of the plugin: routes under /data/plugin/roofline
TAG = "roofline_model"  # the one tag the data routes serve (XProf's tool name)
ALL_HOSTS = "ALL_HOSTS"  # the host value that selects every host of a run, combined

# Flag defaults (--roofline_cache_mb, --roofline_max_file_mb).
DEFAULT_CACHE_MB = 512
DEFAULT_MAX_FILE_MB = 4096
# export --workers' default: one process per idle core once a run's hosts are this big together
# and this many cores are idle (on fewer, a host's own threads take them: processes only add
# the shipping of results and the copies of forked pages).
PARALLEL_MIN_MB = 16
PARALLEL_MIN_CORES = 4
