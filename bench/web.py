"""bench/web: the web pool crawling the Rust book served locally, static and rendered, beside
bare trafilatura extraction of the same pages; worker RSS over 500 pages.

    .venv/bin/python bench/web.py [--pages 200] [--rss-pages 500] [--workers N]
                                  [--max-in-flight 2]
                                  [--runs 3] [--skip-rss] [--skip-rendered]

The Rust toolchain's docs (~/.rustup/toolchains/*/share/doc/rust/html) are served on
127.0.0.1, with one extra page, /bench-index.html, linking to the pages of a run (the
book's pages first, then the reference, the nomicon and cargo's book). `telha serve`
(TELHA_BIN, default the release build) runs `[pools.web]` shaped like the shipped one
(rss_mb, WEB_ALLOW_NETS=127.0.0.1/32). Each run crawls the index with crawl_depth 1, so
its final commit enqueues every page as a child job at once (no CLI in the way), and is
timed on the core's clock from that commit to the last page's end. In one run:
- `--pages` pages crawled once untimed (warm-up), then `--runs` times with render=never,
  then with render=always (each its own tenant, so nothing is an unchanged recrawl):
  pages/s;
- in each run, bare `trafilatura.extract` of the same page files in a fresh interpreter,
  and the worker's handler alone (no core) over the same URLs, both warm the same way
  (one untimed pass over the same pages first, as the crawl has its warm-up): pages/s,
  and the ratios (target: static >= 0.5 of bare);
- the resident size of each worker's process group (worker + Playwright + Chromium),
  sampled every 100 ms while --rss-pages pages are rendered, per 100 pages: summed RSS
  (what rss_mb counts) and PSS, flat with the browser restarted every 50 pages.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
TELHA = Path(os.environ.get("TELHA_BIN") or ROOT / "target" / "release" / "telha")
FINISHED = {"succeeded", "dead", "cancelled"}


def docs_root() -> Path:
    found = sorted(glob.glob(os.path.expanduser("~/.rustup/toolchains/*/share/doc/rust/html")))
    for candidate in found:
        if (Path(candidate) / "book" / "ch04-01-what-is-ownership.html").is_file():
            return Path(candidate)
    raise SystemExit(
        "bench/web: no Rust docs under ~/.rustup/toolchains (rustup component rust-docs)"
    )


def page_paths(docs: Path, count: int) -> list[str]:
    """Book pages first, then the reference, the nomicon and cargo's book; print.html (a
    whole book in one page) and the book's first and second editions (robots.txt disallows
    them) left out."""
    paths: list[str] = []
    for part in ("book", "reference", "nomicon", "cargo"):
        for file in sorted((docs / part).rglob("*.html")):
            relative = "/" + str(file.relative_to(docs))
            if file.name in ("print.html", "toc.html", "404.html"):
                continue
            if "/first-edition/" in relative or "/second-edition/" in relative:
                continue
            paths.append(relative)
    if len(paths) < count:
        raise SystemExit(f"bench/web: only {len(paths)} pages found")
    return paths[:count]


SERVER = """
import functools, http.server, sys
root, index = sys.argv[1], sys.argv[2]
class Handler(http.server.SimpleHTTPRequestHandler):
    # Keep-alive, as every real web server speaks it (the stdlib's default is HTTP/1.0:
    # one TCP connection per page, a cost no real crawl of one host pays).
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds
    # the body until the client's delayed ACK (40 ms a page), as no real server does.
    disable_nagle_algorithm = True
    def log_message(self, *args):
        pass
    def translate_path(self, path):
        if path.split("?", 1)[0] == "/bench-index.html":
            return index
        return super().translate_path(path)
handler = functools.partial(Handler, directory=root)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class DocsServer:
    """The docs tree on 127.0.0.1, plus /bench-index.html: one page linking to the pages a
    run crawls (written by `index`)."""

    def __init__(self, docs: Path, index: Path) -> None:
        # setpriv: the server dies with the bench, however the bench ends.
        setpriv = ["setpriv", "--pdeathsig", "TERM", "--"] if shutil.which("setpriv") else []
        self.index = index
        self.process = subprocess.Popen(
            [*setpriv, sys.executable, "-u", "-c", SERVER, str(docs), str(index)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.base = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def write_index(self, paths: list[str]) -> str:
        links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in paths)
        self.index.write_text(f"<html><body><p>Pages to crawl.</p><ul>{links}</ul></body></html>")
        return self.base + "/bench-index.html"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def group_memory_kib(pgid: int) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) over a process group: the first is what the supervisor's
    rss_mb watchdog adds up (shared pages counted in every process), the second each
    page's fair share."""
    rss = pss = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) != pgid:
                continue
            rss += int((entry / "statm").read_text().split()[1]) * 4
            for line in (entry / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return rss, pss


class Core:
    def __init__(self, root: Path, workers: int, max_in_flight: int) -> None:
        self.root = root
        data = root / "data"
        self.config = root / "supervisor.toml"
        env = {
            "WEB_ALLOW_NETS": "127.0.0.1/32",
            "WEB_STATE_DIR": str(root / "state"),
            "WEB_BROWSER_MAX_PAGES": "50",
        }
        if os.environ.get("PYTHONPATH"):  # the pool's environment is cleared: pass it on
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        self.config.write_text(
            f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{data}"\n'
            "[jobs]\nmax_attempts = 2\nlease_secs = 120\n"
            f'[pools.web]\nformats = ["web"]\nworkers = {workers}\n'
            f"max_in_flight = {max_in_flight}\n"
            f'command = [{json.dumps(str(PYTHON))}, "-m", "web_worker"]\n'
            f"job_timeout_secs = 180\nenv = {{ {env_toml} }}\n"
            "[pools.web.limits]\nrss_mb = 4096\nopen_files = 1024\n"
        )
        self.log = (root / "serve.log").open("wb")
        self.process = subprocess.Popen(
            [str(TELHA), "serve", "--config", str(self.config)], stdout=self.log, stderr=self.log
        )
        addr = data / "serve.addr"
        deadline = time.monotonic() + 30
        while not (addr.exists() and addr.read_text().strip().rpartition(":")[2]):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("bench/web: telha serve did not start")
            time.sleep(0.05)
        self.addr = addr.read_text().strip()

    def cli(self, *args: str) -> Any:
        done = subprocess.run(
            [str(TELHA), *args, "--config", str(self.config), "--addr", self.addr, "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return json.loads(done.stdout)

    def ingest(self, tenant: str, urls: list[str], **options: Any) -> None:
        args = ["ingest", "--tenant", tenant]
        for key, value in options.items():
            args += ["--option", f"{key}={json.dumps(value)}"]
        self.cli(*args, *urls)

    def jobs(self, tenant: str) -> list[dict[str, Any]]:
        listed = self.cli("jobs", "--tenant", tenant, "--format", "web", "--limit", "100000")
        jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
        return jobs

    def worker_pids(self) -> list[int]:
        [pool] = [p for p in self.cli("status")["pools"] if p["name"] == "web"]
        return [int(w["pid"]) for w in pool["workers"] if w.get("pid")]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def crawl(
    core: Core,
    tenant: str,
    index_url: str,
    pages: int,
    sample: list[tuple[int, int, int]] | None,
    **options: Any,
) -> tuple[float, list[dict[str, Any]]]:
    """Crawls the index page (depth 1: every linked page a child job) and waits for all
    pages. Returns the seconds from the index job's end (its final commit enqueues the
    children) to the last page's end, on the core's clock, and the pages' jobs. `sample`
    gets (done, peak RSS KiB, peak PSS KiB) per 100 pages."""
    core.ingest(tenant, [index_url], crawl_depth=1, max_pages=pages + 1, **options)
    peak = [0, 0]
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            figures = [group_memory_kib(p) for p in core.worker_pids()]
            peak[0] = max(peak[0], sum(f[0] for f in figures))
            peak[1] = max(peak[1], sum(f[1] for f in figures))
            time.sleep(0.1)

    if sample is not None:
        threading.Thread(target=sampler, daemon=True).start()
    next_mark = 100
    while True:
        jobs = core.jobs(tenant)
        done = sum(1 for j in jobs if j["state"] in FINISHED)
        if sample is not None and done - 1 >= next_mark:
            sample.append((done - 1, peak[0], peak[1]))
            peak[0] = peak[1] = 0
            next_mark += 100
        if len(jobs) == pages + 1 and done == len(jobs):
            break
        if jobs and done == len(jobs) and jobs[0]["state"] != "succeeded":
            raise SystemExit(f"bench/web: the index job failed: {jobs[0]['failures']}")
        time.sleep(0.1)
    stop.set()
    root = next(j for j in jobs if j["name"] == index_url)
    children = [j for j in jobs if j is not root]
    last = max(int(j["updated_at"]) for j in children)
    return (last - int(root["updated_at"])) / 1e6, children


BARE = """
import sys, time, trafilatura
paths = sys.argv[1:]
pages = [open(p, "rb").read() for p in paths]
for html in pages:  # warm, as the worker is: imports, justext's stoplists, caches
    trafilatura.extract(html, include_links=True, include_tables=True)
started = time.monotonic()
for html in pages:
    trafilatura.extract(html, include_links=True, include_tables=True)
print(time.monotonic() - started)
"""


HANDLER = """
import sys, tempfile, time
from types import MappingProxyType
from web_worker.handler import WebWorker
from workers_common import Job
urls = sys.argv[1:]
with tempfile.TemporaryDirectory() as state:
    worker = WebWorker({"WEB_ALLOW_NETS": "127.0.0.1/32", "WEB_STATE_DIR": state})
    options = MappingProxyType({"render": "never", "crawl_delay_ms": 0})
    def job(url):
        return Job(job_id="b", tenant_id="b", organization_id="", format="web", name=url,
                   options=options, attempts=0, attempt=1, url=url)
    for url in urls:  # warm, as the bare baseline is: robots.txt, connections, caches
        worker.handle(job(url))
    started = time.monotonic()
    for url in urls:
        worker.handle(job(url))
    print(time.monotonic() - started)
    worker.close()
"""


def handler_alone(urls: list[str]) -> float:
    """The worker's handler in one process, no core: fetch, extract, project."""
    done = subprocess.run(
        [str(PYTHON), "-c", HANDLER, *urls],
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    return float(done.stdout.strip())


def bare_trafilatura(docs: Path, paths: list[str]) -> float:
    files = [str(docs / p.lstrip("/")) for p in paths]
    done = subprocess.run(
        [str(PYTHON), "-c", BARE, *files], capture_output=True, text=True, timeout=1800, check=True
    )
    return float(done.stdout.strip())


def report(name: str, elapsed: float, jobs: list[dict[str, Any]]) -> float:
    ok = sum(1 for j in jobs if j["state"] == "succeeded")
    rate = len(jobs) / elapsed
    counted = f"{len(jobs):>4} pages ({ok} succeeded)"
    failed = sorted({j["failures"][-1]["reason"][:80] for j in jobs if j["state"] != "succeeded"})
    print(f"{name:<34} {counted} in {elapsed:6.1f} s = {rate:6.1f} pages/s")
    for reason in failed[:5]:
        print(f"  failed: {reason}")
    return rate


def shipped_workers() -> int:
    """`workers` of the repo's supervisor.toml `[pools.web]` (what an operator runs)."""
    import tomllib

    with (ROOT / "supervisor.toml").open("rb") as handle:
        return int(tomllib.load(handle)["pools"]["web"]["workers"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rss-pages", type=int, default=500)
    parser.add_argument(
        "--workers",
        type=int,
        default=shipped_workers(),
        help="web workers in the pool (default: the shipped [pools.web] workers; 1 shows one "
        "process's rate against bare trafilatura's one process)",
    )
    parser.add_argument(
        "--max-in-flight", type=int, default=2, help="the pool's max_in_flight (shipped: 2)"
    )
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--skip-rendered", action="store_true", help="static and bare only")
    parser.add_argument("--runs", type=int, default=1, help="static vs bare measured N times")
    args = parser.parse_args()
    docs = docs_root()
    paths = page_paths(docs, max(args.pages, args.rss_pages))
    print(
        f"docs {docs}, {os.cpu_count()} cores, telha {TELHA}, {args.workers} web worker(s), "
        f"max_in_flight {args.max_in_flight}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        server = DocsServer(docs, Path(tmp) / "index.html")
        core = Core(Path(tmp), args.workers, args.max_in_flight)
        try:
            index = server.write_index(paths[: args.pages])
            common = {"crawl_delay_ms": 0}
            # Warm, as the bare baseline is (it extracts every page once before its timed
            # pass): the same pages once, untimed, so the worker has its imports done,
            # trafilatura's justext stoplists built, robots.txt cached and a connection.
            crawl(core, "warm-up", index, args.pages, None, render="never", **common)
            ratios = []
            for run in range(1, args.runs + 1):
                print(f"run {run} of {args.runs} (same pages, warm):")
                t, jobs = crawl(
                    core, f"static-{run}", index, args.pages, None, render="never", **common
                )
                static = report("crawl, static (render=never)", t, jobs)
                bare_s = bare_trafilatura(docs, paths[: args.pages])
                bare = args.pages / bare_s
                name = "bare trafilatura.extract"
                print(f"{name:<34} {args.pages:>4} pages in {bare_s:6.1f} s = {bare:6.1f} pages/s")
                alone_s = handler_alone([server.base + p for p in paths[: args.pages]])
                alone = args.pages / alone_s
                name = "handler alone (no core), static"
                print(
                    f"{name:<34} {args.pages:>4} pages in {alone_s:6.1f} s = {alone:6.1f} pages/s"
                )
                print(
                    f"ratio static / bare: {static / bare:.2f}"
                    f" (handler alone / bare: {alone / bare:.2f})"
                )
                ratios.append(static / bare)
            if args.runs > 1:
                print("ratios static / bare: " + ", ".join(f"{r:.2f}" for r in ratios))
            if not args.skip_rendered:
                t, jobs = crawl(
                    core, "rendered", index, args.pages, None, render="always", **common
                )
                report("crawl, rendered (render=always)", t, jobs)
            if not (args.skip_rss or args.skip_rendered):
                index = server.write_index(paths[: args.rss_pages])
                samples: list[tuple[int, int, int]] = []
                t, jobs = crawl(
                    core, "rss", index, args.rss_pages, samples, render="always", **common
                )
                report("crawl, rendered, RSS run", t, jobs)
                for done, rss, pss in samples:
                    print(
                        f"  after {done:>4} pages: peak worker group RSS {rss / 1024:7.1f} MiB"
                        f" (sum over processes), PSS {pss / 1024:7.1f} MiB"
                    )
        finally:
            core.stop()
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
