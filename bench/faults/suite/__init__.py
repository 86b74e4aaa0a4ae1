"""The fault suite (issue 18), one role per module:

- core         a real `telha serve`: its supervisor.toml, process, gRPC stubs, /proc lookups
- fault_worker a misbehaving worker on workers_common (every way the taxonomy names)
- inputs       files made by code: the crash loop's stream
- crash_loop   part 1: SIGKILL of the core in a stream of ingests, restart, check everything
- storm        part 2: the fault worker's storm, classification and retry policy scored
- wirecases    part 3: malformed and adversarial wire submissions, by family
- wirefuzz     part 3: the suite as a worker over WorkerService, with read-back
- hostile      part 4: hostile files per served format through the real pools
- load         part 5: many small jobs beside a storm; throughput and core RSS
- bars         what each part's figures must clear
"""
