"""What a device can do: compute and bandwidth peaks and where they came from.

``perf_env`` (the peaks an analysis judges by, from a profile's plane stats), ``devices``
(the built-in device table, kept as JSON data in ``data/`` and read through the same
validator as a user's ``--peaks`` file), ``device_rules`` (GPU peaks from capability stats,
per-dtype ceilings) and ``calibration`` (measuring this machine). Imports only ``xspace``,
``protos`` and the leaf modules at the top of the package.
"""
