"""Claims the documentation makes in prose, checked on a real server: string-state encodings
(docs/speed.md), redis.conf.example (README.md and docs/operations.md), what volatile-ttl
evicts first and what a restart keeps (docs/operations.md)."""

import os
import subprocess
import time
from pathlib import Path

import redis

from conftest import ROOT, free_port, wait_until

STRING_STATES = [
    ("RL.GCRA", "g", 10, "1s"), ("RL.TOKENBUCKET", "t", 10, 2, "1s"),
    ("RL.LEAKY", "l", 10, 2, "1s"), ("RL.SLIDING", "s", 10, "1m"), ("RL.FIXED", "f", 10, "1m"),
    ("CL.THROTTLE", "c", 10, 1, 60),
]


def test_string_states_are_short_and_raw_encoded(r):
    # docs/speed.md: at most 44 bytes, kept `raw` by the module API's in-place write.
    for command, key, *params in STRING_STATES:
        r.execute_command(command, key, *params)
        assert len(r.get(key)) <= 44
        assert r.object("encoding", key) == "raw", command


def start(args, cwd, log):
    port = free_port()
    proc = subprocess.Popen(["redis-server", *args, "--port", str(port), "--logfile", str(log)],
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port, decode_responses=True)
    wait_until(client.ping, proc, "redis-server", log)
    return proc, client


def test_redis_conf_example_loads_the_module_with_what_the_readme_says(tmp_path):
    module = Path(os.environ.get("RL_MODULE", ROOT / "target/release/librl.so"))
    conf = (ROOT / "redis.conf.example").read_text()
    assert "loadmodule ./target/release/librl.so " in conf
    (tmp_path / "redis.conf").write_text(
        conf.replace("./target/release/librl.so", str(module)))
    proc, c = start([str(tmp_path / "redis.conf"), "--dir", str(tmp_path)], tmp_path,
                    tmp_path / "server.log")
    try:
        settings = {name: c.config_get(name)[name] for name in [
            "appendonly", "appendfsync", "maxmemory", "maxmemory-policy",
            "rl.sliding-log-max-limit"]}
        assert settings == {"appendonly": "yes", "appendfsync": "everysec",
                            "maxmemory": str(256 * 1024 * 1024),
                            "maxmemory-policy": "volatile-ttl",
                            "rl.sliding-log-max-limit": "100000"}
        assert c.execute_command("RL.GCRA", "user:42", 10, "1s", "BURST", 5) == [1, 5, 4, 0, 100]
    finally:
        proc.kill()
        proc.wait()


def test_volatile_ttl_evicts_the_limiters_closest_to_idle_first(tmp_path):
    # docs/operations.md (Memory and eviction): a limiter's expiry is when it is idle again, so
    # volatile-ttl evicts the nearly idle ones first (approximately: Redis samples keys).
    module = Path(os.environ.get("RL_MODULE", ROOT / "target/release/librl.so"))
    proc, c = start(["--loadmodule", str(module), "--save", "", "--appendonly", "no",
                     "--dir", str(tmp_path), "--maxmemory-policy", "volatile-ttl"],
                    tmp_path, tmp_path / "server.log")
    try:
        pipe = c.pipeline(transaction=False)
        for i in range(3000):  # idle in an hour, and in 300 days, interleaved
            pipe.execute_command("RL.GCRA", f"near:{i}", 1, "1h")
            pipe.execute_command("RL.GCRA", f"far:{i}", 1, "300d")
        pipe.execute()
        c.info("rl")  # settles INFO rl's record of these calls, which it then releases
        used = c.info("memory")["used_memory"]
        limit = used - 150_000  # room for about 1,000 fewer keys
        c.config_set("maxmemory", limit)
        # Eviction runs on the next write, and goes on from a timer if it takes longer.
        c.execute_command("RL.GCRA", "trigger", 1, "1s")
        deadline = time.monotonic() + 10
        while c.info("memory")["used_memory"] > limit and time.monotonic() < deadline:
            time.sleep(0.05)
        c.config_set("maxmemory", 0)
        near = sum(c.exists(f"near:{i}") for i in range(3000))
        far = sum(c.exists(f"far:{i}") for i in range(3000))
        evicted_near, evicted_far = 3000 - near, 3000 - far
        assert evicted_near >= 300, (evicted_near, evicted_far)
        assert evicted_near >= 5 * evicted_far, (evicted_near, evicted_far)
    finally:
        proc.kill()
        proc.wait()


def test_a_restart_keeps_every_limiter_and_only_rewritten_settings(tmp_path):
    # docs/operations.md (Upgrading): keys carry over a restart (the append-only file); a CONFIG SET of an
    # rl.* setting lasts until the restart unless CONFIG REWRITE saved it to the file.
    module = Path(os.environ.get("RL_MODULE", ROOT / "target/release/librl.so"))
    conf = tmp_path / "redis.conf"
    conf.write_text(f"loadmodule {module} sliding-log-max-limit 1000\n"
                    f"appendonly yes\nappendfsync always\ndir {tmp_path}\nsave \"\"\n")

    def boot():
        return start([str(conf)], tmp_path, tmp_path / "server.log")

    proc, c = boot()
    try:
        assert c.execute_command("RL.SLIDINGLOG", "log", 5, "1h", "COST", 5)[:3] == [1, 5, 0]
        c.config_set("rl.sliding-log-max-limit", 2000)
        proc.kill(); proc.wait()
        proc, c = boot()
        assert c.config_get("rl.sliding-log-max-limit") == {"rl.sliding-log-max-limit": "1000"}
        assert c.execute_command("RL.SLIDINGLOG", "log", 5, "1h")[:3] == [0, 5, 0]  # still spent
        c.config_set("rl.sliding-log-max-limit", 2000)
        assert c.config_rewrite()
        proc.kill(); proc.wait()
        proc, c = boot()
        assert c.config_get("rl.sliding-log-max-limit") == {"rl.sliding-log-max-limit": "2000"}
    finally:
        proc.kill()
        proc.wait()
