"""The serve config: every key documented, the documented example parses to what it says, and
every mistake is one line naming file:line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suanli.errors import InputError
from suanli.ingest.tail import JOURNAL_COMMAND
from suanli.web.config import (
    bind_warning,
    documented_keys,
    load_serve_config,
    merge_listen,
    parse_listen,
    parse_serve_config,
    parse_size,
)
from suanli.web.settings import Listen, ServeConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "serve.md"


def _example(title: str = "Example") -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"### {title}\n\n(?:[^`]*?\n\n)?```yaml\n(.*?)```", text, re.S)
    assert m, f"docs/serve.md has no {title!r} config"
    return m.group(1)


def test_every_key_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    keys_section = text[text.index("### Keys"):text.index("\n## ", text.index("### Keys"))]
    table = set(re.findall(r"^\| `([^`]+)` \|", keys_section, re.M))
    keys = documented_keys()
    missing = [k for k in keys if k not in table]
    assert not missing, f"config keys not documented in docs/serve.md: {missing}"
    assert not table - set(keys), f"docs/serve.md documents keys the parser does not take: {table - set(keys)}"


def test_every_key_appears_in_the_example() -> None:
    example = _example() + _example("Example on a TSDB")
    leaves = {k.rsplit(".", 1)[-1] for k in documented_keys()}
    absent = sorted(k for k in leaves if not re.search(rf"^\s*-?\s*{re.escape(k)}:", example, re.M))
    assert not absent, f"the example in docs/serve.md does not show: {absent}"


def test_the_example_parses_to_what_it_says(tmp_path: Path) -> None:
    cfg_file = tmp_path / "serve.yaml"
    cfg_file.write_text(_example())
    cfg = load_serve_config(cfg_file)
    base = tmp_path.resolve()
    assert cfg.listen == Listen("127.0.0.1", 9177)
    assert (cfg.backend.kind, cfg.backend.path) == ("duckdb", str(base / "cluster.duckdb"))
    assert cfg.inventory == str(base / "inventory.yaml") and cfg.rules == (str(base / "rules.yaml"),)
    assert (cfg.evaluation.interval_s, cfg.evaluation.window_s, cfg.reload_interval_s) == (30, 3600, 5)
    assert [(t.job, t.instance, t.url, t.interval_s, t.timeout_s) for t in cfg.scrape] == [
        ("dcgm", "node-001:9400", "http://node-001:9400/metrics", 15, 10),
        ("dcgm", "node-002:9400", "http://node-002:9400/metrics", 15, 10),
        ("node", "node-001:9100", "http://node-001:9100/metrics", 30, 10),
        ("node", "node-002:9100", "http://node-002:9100/metrics", 30, 10)]
    assert cfg.scrape[0].labels == (("cluster", "demo-a"),) and cfg.scrape[2].max_body_bytes == 64 << 20
    assert cfg.scrape[0].source == f"{cfg_file}:14" and cfg.evaluation.clock == "auto"
    assert [(s.path, s.host, s.from_start) for s in cfg.logs[:2]] == [
        ("/var/log/kern.log", "node-001", False), ("/var/log/trainer/rank0.log", None, True)]
    assert cfg.logs[2].command == (*JOURNAL_COMMAND, "-k")
    assert cfg.alertmanager[0].url == "http://127.0.0.1:9093"
    assert cfg.remote_write[0].token_file == str(base / "vm-token") and cfg.remote_write[0].timeout_s == 30
    assert (cfg.auth.token_file, cfg.auth.token_env, cfg.auth.open_reads) == ("/etc/suanli/token", "SUANLI_TOKEN",
                                                                            False)
    r = cfg.receivers
    assert (r.otlp.max_body_bytes, r.otlp.max_decompressed_bytes, r.otlp.queue_items) == (16 << 20, 64 << 20,
                                                                                          200_000)
    assert (r.kineto.max_decompressed_bytes, r.kineto_upload_dir) == (1 << 30, str(base / "kineto-uploads"))
    assert r.retry_after_s == 1.0


def test_the_tsdb_example_parses_to_what_it_says(tmp_path: Path) -> None:
    from suanli.web.service import _tsdb

    cfg_file = tmp_path / "serve.yaml"
    cfg_file.write_text(_example("Example on a TSDB"))
    b = load_serve_config(cfg_file).backend
    base = tmp_path.resolve()
    assert (b.kind, b.url, b.basic_auth_file) == ("prometheus", "http://vmselect:8481/select/0/prometheus",
                                                  str(base / "vm-basic-auth"))
    assert b.metric_maps == ("node-exporter-infiniband", str(base / "our-names.yaml"))
    (tmp_path / "vm-basic-auth").write_text("suanli:s3cret\n")
    (tmp_path / "our-names.yaml").write_text("metrics:\n  DCGM_FI_DEV_GPU_TEMP: {name: my_gpu_temp_celsius}\n")
    prom = _tsdb(load_serve_config(cfg_file))
    assert (prom.username, prom.password, prom.bearer_token) == ("suanli", "s3cret", None)
    assert prom.metric_map.source("DCGM_FI_DEV_GPU_TEMP").name == "my_gpu_temp_celsius"


def test_defaults() -> None:
    assert load_serve_config(None) == ServeConfig()
    assert parse_serve_config("", "empty.yaml").listen == Listen("127.0.0.1", 9177)
    assert str(ServeConfig().listen) == "127.0.0.1:9177"


@pytest.mark.parametrize(("text", "where"), [
    ("listen: 127.0.0.1\n", "s.yaml:1: listen: bad address '127.0.0.1' (expected HOST:PORT"),
    ("listen: 127.0.0.1:70000\n", "s.yaml:1: listen: bad address"),
    ("lsiten: x\n", "s.yaml:1: unknown key 'lsiten'; valid keys: listen, backend"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n    intervl: 5s\n", "s.yaml:4: scrape[0]: unknown key 'intervl'"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n    interval: 5\n", "s.yaml:4: scrape[0].interval: bad duration '5'"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n    interval: 5s\n    timeout: 6s\n",
     "s.yaml:5: scrape[0].timeout: longer than the interval (5s)"),
    ("scrape:\n  - job: d\n    targets: [nohost]\n", "s.yaml:3: scrape[0].targets: bad address 'nohost'"),
    ("scrape:\n  - job: d\n", "s.yaml:2: scrape[0]: missing 'targets'"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n  - job: d\n    targets: [a:1]\n",
     "s.yaml:5: scrape: target d/a:1 given twice (first at s.yaml:3)"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n    labels: {__x: 1}\n", "s.yaml:4: scrape[0].labels: bad label name"),
    ("scrape:\n  - job: d\n    targets: [a:1]\n    scheme: ftp\n", "s.yaml:4: scrape[0].scheme: expected http or https"),
    ("logs:\n  - path: a\n    journal: true\n", "s.yaml:2: logs[0]: give either 'path' or 'journal'"),
    ("logs:\n  - journal: maybe\n", "s.yaml:2: logs[0].journal: expected true or false"),
    ("backend:\n  kind: prometheus\n", "s.yaml:2: backend: kind prometheus needs 'url'"),
    ("backend: {kind: prometheus, url: 'http://p:9090'}\nscrape:\n  - job: d\n    targets: [a:1]\n",
     "s.yaml:3: scrape: with backend.kind prometheus the TSDB holds the metrics"),
    ("backend:\n  path: x.duckdb\n  token_file: t\n", "s.yaml:3: backend: token_file: only with kind prometheus"),
    ("backend:\n  kind: mysql\n", "s.yaml:2: backend.kind: unknown 'mysql'; valid: duckdb, prometheus"),
    ("alertmanager:\n  - url: localhost:9093\n", "s.yaml:2: alertmanager[0].url: expected an http:// or https://"),
    ("auth:\n  open_reads: yes please\n", "s.yaml:2: auth.open_reads: expected true or false"),
    ("receivers:\n  otlp:\n    queue: 0\n", "s.yaml:3: receivers.otlp.queue: must be more than 0"),
    ("receivers:\n  otlp:\n    max_body: 16 megs\n", "s.yaml:3: receivers.otlp.max_body: bad size '16 megs'"),
    ("receivers:\n  otlp:\n    upload_dir: x\n", "s.yaml:3: receivers.otlp: unknown key 'upload_dir'"),
    ("evaluation: 30s\n", "s.yaml:1: evaluation: expected a mapping"),
    ("evaluation:\n  clock: sundial\n", "s.yaml:2: evaluation.clock: 'sundial': expected auto, wall, data"),
    ("scrape: [\n", "s.yaml:2: YAML syntax error"),
])
def test_mistakes_name_file_and_line(text: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        parse_serve_config(text, "s.yaml")
    assert str(err.value).startswith(where), str(err.value)


def test_listen_override_and_bind_warning() -> None:
    cfg = parse_serve_config("listen: 127.0.0.1:9000\n", "s.yaml")
    assert merge_listen(cfg, None).listen == Listen("127.0.0.1", 9000)
    assert merge_listen(cfg, "[::1]:9300").listen == Listen("::1", 9300)
    with pytest.raises(InputError, match=r"^--listen: bad address 'nope'"):
        merge_listen(cfg, "nope")
    for quiet in ("127.0.0.1:1", "127.3.4.5:1", "[::1]:1", "localhost:1"):
        assert bind_warning(parse_listen(quiet)) is None, quiet
    for loud in ("0.0.0.0:9177", "[::]:9177", "10.1.2.3:9177", "gpu-head:9177"):
        warning = bind_warning(parse_listen(loud))
        assert warning is not None and "reachable from other machines" in warning, loud


def test_sizes() -> None:
    assert [parse_size(s) for s in ("1", "2KiB", "3MB", "1.5GiB")] == [1, 2048, 3_000_000, 3 * (1 << 29)]
