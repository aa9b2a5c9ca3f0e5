"""``tensorboard`` whose conversions are slow on purpose, for the browser tests of the tab's
loading feedback (tests/test_frontend_feedback.py): each conversion stage (reading,
analysing) and each rendered response waits ``TB_ROOFLINE_TEST_STAGE_S`` seconds first, so
a small profile takes as long as a big one without the CPU time. Run as
``python tests/slow_tensorboard.py --logdir ...`` (tensorboard's own arguments)."""

from __future__ import annotations

import os
import sys
import time

from tb_roofline_plugin.serve import convert, service

STAGE_S = float(os.environ.get("TB_ROOFLINE_TEST_STAGE_S", "1.5"))
_convert_file = convert.convert_file
_render = service.Result.render


def slow_convert(path, peaks=None, max_bytes=convert.DEFAULT_MAX_BYTES, device=None, on_stage=None):
    def stage(name: str) -> None:
        if on_stage is not None:
            on_stage(name)
        time.sleep(STAGE_S)

    return _convert_file(path, peaks, max_bytes, device=device, on_stage=stage)


def slow_render(self, *args, **kwargs):
    time.sleep(STAGE_S)
    return _render(self, *args, **kwargs)


service.convert_file = slow_convert
service.Result.render = slow_render

if __name__ == "__main__":
    from tensorboard.main import run_main

    sys.argv = ["tensorboard", *sys.argv[1:]]
    run_main()
