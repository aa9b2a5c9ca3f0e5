"""TensorBoard entry point: flags and lazy loading of the roofline plugin.

TensorBoard imports this module unguarded at start-up, so it imports nothing but
``base_plugin`` and the leaf ``metadata``; everything heavy is imported inside ``load()``,
where a failure only disables this plugin.
"""

from __future__ import annotations

from tensorboard.plugins import base_plugin

from ..metadata import DEFAULT_CACHE_MB, DEFAULT_MAX_FILE_MB


class RooflineLoader(base_plugin.TBLoader):
    """Defines ``--roofline_*`` flags and builds the plugin."""

    def define_flags(self, parser) -> None:
        group = parser.add_argument_group("roofline plugin")
        group.add_argument(
            "--roofline_peaks",
            metavar="NAME_OR_FILE",
            default=None,
            help="device peaks to judge profiles by when they carry none (CPU) or for a what-if: "
            "a device name from the built-in table or a JSON file (see `tb-roofline calibrate`)",
        )
        group.add_argument(
            "--roofline_cache_mb",
            metavar="MB",
            type=float,
            default=DEFAULT_CACHE_MB,
            help=f"memory bound of the converted-profile cache (default {DEFAULT_CACHE_MB})",
        )
        group.add_argument(
            "--roofline_max_file_mb",
            metavar="MB",
            type=float,
            default=DEFAULT_MAX_FILE_MB,
            help="profiles larger than this are refused with a message, not loaded "
            f"(default {DEFAULT_MAX_FILE_MB})",
        )

        group.add_argument(
            "--roofline_workers",
            metavar="N",
            type=int,
            default=None,
            help="worker processes that convert the hosts of a run in parallel "
            "(default: the number of cores; 1 converts in the server process)",
        )
        group.add_argument(
            "--roofline_cache_dir",
            metavar="DIR",
            default=None,
            help="read converted profiles from this folder (written by `tb-roofline export "
            "--dask ... --cache-dir DIR`), outside the logdir; the plugin never writes there",
        )

        group.add_argument(
            "--roofline_calibration_dir",
            metavar="DIR",
            default=None,
            help="where the tab's measurement of this machine (`calibrate`, run on request) is "
            "kept, outside the logdir (default: $XDG_CACHE_HOME/tb-roofline, else "
            "~/.cache/tb-roofline)",
        )

        group.add_argument(
            "--roofline_allowed_hosts",
            metavar="NAME[,NAME]",
            default=None,
            help="more names the roofline routes answer to in the Host header (a proxy's "
            "public name; * for any), besides localhost, IP addresses, --host and, with "
            "--bind_all, this machine's names; other names get 403 (DNS rebinding)",
        )

    def fix_flags(self, flags) -> None:
        for name in ("roofline_cache_mb", "roofline_max_file_mb", "roofline_workers"):
            value = getattr(flags, name, None)
            if value is not None and value <= 0:
                raise base_plugin.FlagsError(f"--{name} must be positive, got {value}")
        spec = getattr(flags, "roofline_peaks", None)
        if spec:
            from ..peaks.devices import load_peaks

            try:
                load_peaks(spec)
            except (KeyError, ValueError) as exc:
                message = exc.args[0] if exc.args else str(exc)
                raise base_plugin.FlagsError(f"--roofline_peaks: {message}") from None

    def load(self, context):
        from .plugin import RooflinePlugin

        return RooflinePlugin(context)
