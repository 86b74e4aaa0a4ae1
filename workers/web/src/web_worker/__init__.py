"""web_worker: Telha's web format worker (URL jobs into PAGE, SECTION, PARAGRAPH, URL_REF).

Modules, one role each:
- handler     format `web`: the job's flow (robots, turn, fetch, render, extract, project)
- options     a job's options, checked
- guard       the SSRF guard: resolve once, refuse private networks, pin the address
- fetch       guarded static GETs, redirects by hand, size and time caps, status mapping
- charset     header, BOM, <meta>, detection
- robots      robots.txt rules per host (protego), cached with a TTL
- polite      one fetch at a time per host across the pool, minimum interval (lock files)
- browser     the worker's Chromium: lazy start, restarts, dies with the worker
- render      one page rendered with every request intercepted and guarded
- htmlscan    selectolax reads: metadata, links, the render rule, fallback blocks
- extract     main content by trafilatura under a time limit, as blocks
- urls        URL normalization
- crawl       which links become child jobs, with the crawl's budget
- routing     non-HTML responses to the format that serves them
- projection  the submission
"""

from .handler import FORMATS, HANDLERS, handle

__all__ = ["FORMATS", "HANDLERS", "handle"]
