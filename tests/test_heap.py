"""glibc's heap and the cycle collector as a conversion sets them: freed arrays kept for reuse
(fewer fresh pages for the kernel to zero), freed pages handed back where memory matters,
cycles collected rarely, and the same output."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from tb_roofline_plugin import heap
from tb_roofline_plugin.cli import KEEP_HEAP_ENV
from tb_roofline_plugin.demo import CpuSpec, cpu_xspace

GLIBC = sys.platform.startswith("linux") and heap._LIBC is not None


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt and malloc_trim")
def test_the_heap_settings_take_on_glibc():
    assert heap.MMAP_THRESHOLD_BYTES == 32 << 20  # glibc refuses more (HEAP_MAX_SIZE / 2)
    # In a process of its own: the settings last for the rest of the process.
    code = (
        "from tb_roofline_plugin import heap\n"
        "print(heap.reuse_freed_memory())\n"
        "heap.release_freed_memory()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip() == "True"


def test_cycles_are_collected_rarely_and_still_collected_within_a_conversion():
    code = (
        "import gc, weakref\n"
        "from tb_roofline_plugin import heap\n"
        "before = gc.get_threshold()\n"
        "class Node: pass\n"
        "with heap.cycles_collected_rarely():\n"
        "    a, b = Node(), Node(); a.b, b.a = b, a; alive = weakref.ref(a); del a, b\n"
        "    print(gc.get_threshold()[0], alive() is not None)\n"
        "    gc.collect(); print(alive() is None)\n"
        "print(gc.get_threshold() == before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(heap.YOUNG_COLLECTION_ALLOCATIONS), "True", "True", "True"]


def test_an_export_is_the_same_with_the_heap_kept_as_it_is(tmp_path):
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(cpu_xspace(CpuSpec(steps=4)).SerializeToString())
    outputs = []
    for keep in (False, True):
        env = {k: v for k, v in os.environ.items() if k != KEEP_HEAP_ENV}
        if keep:
            env[KEEP_HEAP_ENV] = "1"
        command = [sys.executable, "-m", "tb_roofline_plugin.cli", "export", str(path)]
        done = subprocess.run(command, capture_output=True, env=env, cwd=REPO, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and b'"rows"' in outputs[0]
