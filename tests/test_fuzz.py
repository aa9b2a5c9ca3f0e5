"""Bounded fuzzing of the profile reader and pipeline, the HLO cost model and the HTTP API.

The contract (see ``fuzz_support``): every input gives a result or a ``RooflineError`` (one
line, naming the input), never another exception, never NaN or infinity in an output, within
a per-input deadline and memory bound; every HTTP request gets a 2xx/4xx with ``nosniff``.

Seeds: the real profiles of ``../shared/data`` (read here, never copied) and small generated
ones. Each fuzz test runs under its own time budget (the module takes about 35 s on two
cores); ``benchmarks/fuzz_long.py`` runs the same targets for minutes. Set
``TB_ROOFLINE_FUZZ_RANDOM=1`` to explore new inputs on every run instead of the fixed
(derandomized) sequence.

Failures that match a known, not yet fixed bug (``fuzz_support.KNOWN_BUGS``, empty now) are
counted, not raised, so the fuzz tests keep looking for new bugs meanwhile. Every bug found so
far is fixed; its input stays below as a regression test that must pass.
"""

from __future__ import annotations

import collections
import os
import random
import time
import urllib.parse

import fuzz_support as fs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RANDOM = bool(os.environ.get("TB_ROOFLINE_FUZZ_RANDOM"))
BUDGET_S = {"bytes": 9.0, "fields": 9.0, "hlo": 6.0, "http": 5.0, "decoder": 5.0}
SEEDS = fs.seed_profiles()
SEED_NAMES = [name for name, _ in SEEDS]
SEED_DATA = dict(SEEDS)
ALL_DATA = [data for _, data in SEEDS]

STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
STARTED: dict[str, float] = {}
LAST: dict[str, float] = {}


def _settings(max_examples: int):
    return settings(
        max_examples=max_examples,
        deadline=None,  # fs.bounded() enforces a per-input deadline instead
        derandomize=not RANDOM,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


def _out_of_budget(target: str) -> bool:
    start = STARTED.setdefault(target, time.monotonic())
    if time.monotonic() - start > BUDGET_S[target]:
        STATS[target]["skipped (budget)"] += 1
        return True
    return False


def _record(target: str, run, data: bytes | None = None) -> None:
    """Runs one input; counts its outcome; raises on a failure that is not a known bug."""
    STATS[target]["executions"] += 1
    try:
        outcome = run()
        LAST[target] = time.monotonic()
    except fs.FuzzFailure as failure:
        bug = fs.known_bug(failure, data)
        if bug is None:
            raise
        STATS[target][f"known bug {bug.bug_id}"] += 1
        LAST[target] = time.monotonic()
        return
    STATS[target][outcome.split(":")[0]] += 1


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    """Prints executions, time and outcomes per target after the module (also with -q)."""
    yield
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for target, counts in STATS.items():
            spent = LAST.get(target, 0.0) - STARTED.get(target, 0.0)
            parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "executions")
            reporter.write_line(
                f"fuzz {target}: {counts['executions']} executions in {spent:.1f} s ({parts})"
            )


# --- the corpus itself -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SEED_NAMES)
def test_every_seed_gives_a_result_or_one_line_error(name):
    outcome = fs.profile_target(SEED_DATA[name], name)
    if "CORRUPT" in name:
        assert outcome.startswith("error: ") and "not a valid XSpace profile" in outcome
    else:
        assert outcome.startswith("ok: "), outcome


def test_seed_corpus_has_real_samples_and_hlo_modules(shared_data):
    assert len(fs.shared_profiles()) >= 7
    assert len(fs.seed_modules()) >= 50  # GPU and CPU samples carry their HLO modules


# --- target 1: the profile pipeline ----------------------------------------------------------


@_settings(max_examples=400)
@given(
    seed=st.sampled_from(SEED_NAMES),
    rng_seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 3),
)
def test_fuzz_profile_bytes(seed, rng_seed, count):
    """Truncation, bit/byte flips, inserted/deleted/duplicated bytes, huge varints, splices."""
    if _out_of_budget("bytes"):
        return
    rng = random.Random(rng_seed)
    data = SEED_DATA[seed]
    for _ in range(count):
        data, _ = fs.mutate_bytes(rng, data, ALL_DATA)
    _record("bytes", lambda: fs.profile_target(data, f"{seed}"), data)


@_settings(max_examples=400)
@given(
    seed=st.sampled_from(SEED_NAMES),
    rng_seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 4),
)
def test_fuzz_profile_fields(seed, rng_seed, count):
    """Field-level mutations of the decoded XSpace (and of the HLO protos and breakdowns in it)."""
    if _out_of_budget("fields"):
        return
    data, _ = fs.mutate_xspace_fields(random.Random(rng_seed), SEED_DATA[seed], count)
    _record("fields", lambda: fs.profile_target(data, f"{seed}"), data)


# --- target 2: the HLO cost model ------------------------------------------------------------

MODULES = fs.seed_modules()


@pytest.mark.skipif(not MODULES, reason="no HLO modules in the seeds")
@_settings(max_examples=1500)
@given(
    index=st.integers(0, max(len(MODULES) - 1, 0)),
    rng_seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 8),
    as_bytes=st.booleans(),
)
def test_fuzz_hlo_cost(index, rng_seed, count, as_bytes):
    """Mutated HloModuleProtos: every instruction's cost, category, source and kind."""
    if _out_of_budget("hlo"):
        return
    rng = random.Random(rng_seed)
    module = MODULES[index]
    if as_bytes:
        data = module.SerializeToString()
        for _ in range(min(count, 3)):
            data, _ = fs.mutate_bytes(rng, data)
        _record("hlo", lambda: fs.hlo_bytes_target(data))
    else:
        mutated, _ = fs.mutate_module(rng, module, count)
        _record("hlo", lambda: fs.hlo_target(mutated))


# --- target 4: the compiled event decoder ----------------------------------------------------


@pytest.mark.skipif(
    not fs.event_table_compiled(), reason="the compiled decoder (_wire.c) is not built"
)
@_settings(max_examples=800)
@given(rng_seed=st.integers(0, 2**32 - 1), timestamp_ns=st.sampled_from([0, 7, 10**9, 10**16]))
def test_fuzz_event_decoder(rng_seed, timestamp_ns):
    """Random events, truncated, bit-flipped or replaced by random bytes: the C decoder gives
    the table (or the kind of error) that protobuf and the numpy path give, never a crash."""
    if _out_of_budget("decoder"):
        return
    events = fs.random_events(random.Random(rng_seed))
    _record("decoder", lambda: fs.decoder_target(events, timestamp_ns))


# --- target 3: HTTP query handling -----------------------------------------------------------


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    return fs.http_target(tmp_path_factory.mktemp("fuzz_logdir"))


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


def _values(runs):
    return st.one_of(
        st.sampled_from(runs),
        st.sampled_from(["h0", "h1", "ALL_HOSTS", "0", "1", "2", "average", "total", "json"]),
        st.sampled_from(fs.HOSTILE),
        _TEXT,
    )


@st.composite
def _requests(draw, runs):
    route = draw(
        st.one_of(
            st.sampled_from(fs.ROUTES),
            st.sampled_from(["static/plotly.min.js", "static/style.css", "static/../plugin.py"]),
            _TEXT.map(lambda t: urllib.parse.quote(t, safe="/%.")),
            _TEXT.map(lambda t: "static/" + urllib.parse.quote(t, safe="%.\\")),
        )
    )
    if draw(st.integers(0, 9)) == 0:
        return route, draw(st.binary(max_size=80))  # raw, possibly undecodable bytes
    keys = draw(st.lists(st.one_of(st.sampled_from(fs.PARAMS), _TEXT), max_size=8))
    safe = draw(st.sampled_from(["", "/", "/%<>\\"]))
    query = "&".join(
        f"{urllib.parse.quote(k, safe=safe)}={urllib.parse.quote(draw(_values(runs)), safe=safe)}"
        for k in keys
    )
    return route, query


def test_fuzz_http(http):
    target, runs = http

    @_settings(max_examples=600)
    @given(request=_requests(runs))
    def fuzz(request):
        if _out_of_budget("http"):
            return
        route, query = request
        _record("http", lambda: target(f"{fs.BASE}/{route}", query))

    fuzz()
    assert STATS["http"]["200"] > 0 and STATS["http"]["404"] > 0 and STATS["http"]["400"] > 0


# --- regression tests of the bugs the fuzzers found ------------------------------------------


def _profile(builder):
    return lambda: fs.profile_target(builder(), "regression.xplane.pb")


def _bug(bug_id: str, run, reason: str):
    """A bug the fuzzing found and that is fixed: its input must pass (``reason``: what it was)."""
    return pytest.param(run, id=bug_id)


@pytest.mark.parametrize(
    "run",
    [
        _bug(
            "event-decode",
            _profile(fs.malformed_event_profile),
            "event-decode: a malformed event in an XLineLite raises protobuf DecodeError from "
            "event_table.line_table (XEvent.FromString fallback) instead of ProfileError",
        ),
        _bug(
            "breakdown-decode",
            _profile(fs.bad_breakdown_profile),
            "breakdown-decode: an undecodable memory_access_breakdown stat raises protobuf "
            "DecodeError from tpu._op_table instead of ProfileError",
        ),
        _bug(
            "timestamp-overflow",
            _profile(fs.huge_timestamp_profile),
            "timestamp-overflow: XLine.timestamp_ns=1e16 overflows int64 in "
            "event_table._table (timestamp_ns * 1000): OverflowError",
        ),
        _bug(
            "duration-overflow",
            _profile(fs.huge_duration_profile),
            "duration-overflow: an event of duration 2**63-1 ps overflows in "
            "op_metrics.with_idle: OverflowError",
        ),
        _bug(
            "step-num-range",
            _profile(fs.negative_step_profile),
            "step-num-range: step_num -1 (or > 2**32-1) reaches the uint32 "
            "RooflineModelRecord.step_num in roofline._records: ValueError",
        ),
        _bug(
            "step-num-infinite",
            _profile(fs.infinite_step_profile),
            "step-num-infinite: a double step_num of inf raises OverflowError in tpu._steps",
        ),
        _bug(
            "nan-cost-crash",
            _profile(lambda: fs.stat_profile(0, float("nan"))),
            "nan-cost-crash: a NaN flops (or bytes_accessed) stat raises ValueError "
            "int(NaN) in roofline._records",
        ),
        _bug(
            "inf-flops",
            _profile(lambda: fs.stat_profile(0, float("inf"))),
            "non-finite-output: an inf (or 1e308) flops stat gives inf in the datatable "
            "(measured_flop_rate)",
        ),
        _bug(
            "huge-flops",
            _profile(lambda: fs.stat_profile(0, 1e308)),
            "non-finite-output: flops 1e308 on an op with 2 occurrences sums to inf",
        ),
        _bug(
            "inf-bytes",
            _profile(lambda: fs.stat_profile(2, float("inf"))),
            "non-finite-output: an inf bytes_accessed stat gives inf in the datatable",
        ),
        _bug(
            "nan-peak",
            _profile(lambda: fs.peak_profile(float("nan"))),
            "non-finite-output: a NaN peak_teraflops_per_second gives NaN efficiencies",
        ),
        _bug(
            "inf-peak",
            _profile(lambda: fs.peak_profile(float("inf"))),
            "non-finite-output: an inf peak_teraflops_per_second gives inf in the json device",
        ),
        _bug(
            "hlo-overflow",
            lambda: fs.hlo_target(fs.huge_shape_module()),
            "hlo-overflow: a shape of more than 1.8e308 elements raises OverflowError (int too "
            "large to convert to float) out of ModuleCosts.cost",
        ),
        _bug(
            "hlo-conv-allocation",
            lambda: fs.hlo_target(fs.huge_kernel_module()),
            "hlo-conv-allocation: a convolution with window size 2**31 allocates np.arange("
            "kernel) (16 GiB) in hlo_cost._valid_positions",
        ),
    ],
)
def test_known_bug(run):
    run()
