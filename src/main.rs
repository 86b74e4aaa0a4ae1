//! The `telha` binary: parses the command line and hands over to [`telha::cli`].
use std::process::ExitCode;

use std::io::IsTerminal;

use clap::Parser;
use telha::config::LogFormat;

// mimalloc rather than glibc's malloc: the server parses submissions on a pool of
// blocking threads, and glibc gives each thread an arena whose freed pages it keeps;
// mimalloc returns them, and is faster on the parse's many small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `[server].log_format` of the config `serve` will read (text when it cannot be read:
/// `serve` reports that itself, once logging is set up).
fn log_format(g: &telha::cli::Global) -> LogFormat {
    let path = g.config.clone().unwrap_or_else(|| "supervisor.toml".into());
    telha::config::Config::load(&path).map_or(LogFormat::Text, |c| c.server.log_format)
}

/// The core's heap in 4 KiB pages, whatever the host's transparent-huge-page policy:
/// where it is `always`, each fresh 2 MiB region the allocator touches is zeroed whole by
/// the page fault, and the heap's churn (a submission parsed, a redb page allocated and
/// freed) keeps faulting new ones. Measured on a 3,000-file code archive through `telha
/// run` (THP `always`, 2 cores): the core's system time 2.0 → 1.5 s and its peak RSS
/// 268-325 → 239-243 MB. As Redis does (`disable-thp`). The pool's workers get the host's
/// policy back when they are spawned (src/supervise/spawn.rs).
fn no_huge_pages() {
    if let Err(e) = nix::sys::prctl::set_thp_disable(true) {
        tracing::debug!(error = %e, "cannot opt out of transparent huge pages");
    }
}

fn main() -> ExitCode {
    let cli = telha::cli::Cli::parse();
    // `serve` and `run` hold the core; the other commands are its clients.
    let core = matches!(cli.command, telha::cli::Command::Serve | telha::cli::Command::Run(_));
    if !core {
        // A client command whose reader went away (`telha status | head -1`) ends quietly,
        // as other command-line tools do, instead of panicking on the broken pipe. The
        // server keeps Rust's default (ignored: a write to a closed socket is an error).
        // SAFETY: signal(2) with SIG_DFL before any thread is started.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let default_level = if matches!(cli.command, telha::cli::Command::Serve) { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if matches!(cli.command, telha::cli::Command::Serve) && log_format(&cli.global) == LogFormat::Json {
        // One JSON object a line, for log shippers.
        fmt.json().with_current_span(false).init();
    } else {
        fmt.with_ansi(std::io::stderr().is_terminal()).init();
    }
    if core {
        no_huge_pages();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("telha: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(telha::cli::run(cli))
}
