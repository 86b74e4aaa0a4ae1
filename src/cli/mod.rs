//! The `telha` command line (DESIGN.md §7). Client commands talk to a running
//! server over gRPC; `serve` runs one.

mod check;
mod client;
mod graph;
mod render;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub use client::Client;

#[derive(Debug, Parser)]
#[command(name = "telha", version, about = "Telha ingestion tier: supervises format workers and queues their jobs")]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct Global {
    /// supervisor.toml to read (default ./supervisor.toml, or built-in defaults when absent).
    #[arg(long, global = true, env = "TELHA_CONFIG")]
    pub config: Option<PathBuf>,
    /// Server address (host:port); default from TELHA_ADDR, then [server].listen.
    #[arg(long, global = true, env = "TELHA_ADDR")]
    pub addr: Option<String>,
    /// CA certificate (PEM) to verify a TLS server with; default `[server].tls_ca` of the
    /// config when it turns TLS on. With it the client speaks TLS.
    #[arg(long, global = true, env = "TELHA_CA")]
    pub ca: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the supervisor and gRPC server until SIGTERM/SIGINT.
    Serve,
    /// Embedded one-shot: start the core and its pools, ingest, wait (child jobs too), summarise, stop.
    Run(RunArgs),
    /// Submit files or URLs as jobs.
    Ingest(IngestArgs),
    /// List jobs.
    Jobs(JobsArgs),
    /// Show one job.
    Job(IdArgs),
    /// Move a dead or cancelled job back to the queue.
    Retry(IdArgs),
    /// Cancel a queued, leased or retrying job.
    Cancel(IdArgs),
    /// A succeeded job's projection: canonical text, spans, nodes, relationships, ambiguities.
    Graph(GraphArgs),
    /// One node of a tenant: its versions and its edges in and out.
    Node(NodeArgs),
    /// Temporal ambiguities of a tenant (or of one job), with all their candidates.
    Ambiguities(AmbiguitiesArgs),
    /// Queue depth per format and state, and the workers polling.
    Status,
    /// Check wire submissions offline with the core's validator: each file holds one job's
    /// submissions as a JSON array (a golden file) or one submission. One JSON line per file.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Tenant the jobs belong to.
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// Organization within the tenant.
    #[arg(long, default_value = "")]
    pub organization: String,
    /// Format (default: from the file extension; "web" for URLs).
    #[arg(long)]
    pub format: Option<String>,
    /// KEY=VALUE set in the job's options (VALUE parsed as JSON when it parses).
    #[arg(long = "option", value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// Wait until every job is finished; exit non-zero if any ended dead or cancelled.
    #[arg(long)]
    pub wait: bool,
    /// Files or http(s) URLs.
    #[arg(required = true, value_name = "PATH|URL")]
    pub inputs: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[arg(long, default_value = "default")]
    pub tenant: String,
    /// Format for every input (default: from each file's extension).
    #[arg(long)]
    pub format: Option<String>,
    /// KEY=VALUE set in every job's options.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    pub options: Vec<String>,
    /// Files, folders (walked recursively, sorted) or http(s) URLs.
    #[arg(required = true, value_name = "PATH|URL")]
    pub inputs: Vec<String>,
}

#[derive(Debug, Args)]
pub struct JobsArgs {
    #[arg(long)]
    pub state: Option<String>,
    #[arg(long)]
    pub format: Option<String>,
    #[arg(long)]
    pub tenant: Option<String>,
    /// Most jobs to show (newest pages are not skipped: jobs come in id order).
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    pub id: String,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// Job id.
    pub id: String,
    /// Only if the job belongs to this tenant.
    #[arg(long)]
    pub tenant: Option<String>,
    /// Every entry: page through lists longer than one read's --page-items.
    #[arg(long)]
    pub all: bool,
    /// Most spans, nodes, relationships and ambiguities per read.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub page_items: u32,
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Node id (core-assigned `n<number>` or a worker's deterministic id).
    pub id: String,
    /// Tenant whose node this is (node ids are scoped by tenant).
    #[arg(long, default_value = "default")]
    pub tenant: String,
}

#[derive(Debug, Args)]
pub struct AmbiguitiesArgs {
    /// Only this job's ambiguities.
    #[arg(long)]
    pub job: Option<String>,
    /// Tenant (default: the job's tenant with --job, else "default").
    #[arg(long)]
    pub tenant: Option<String>,
}

/// Runs the CLI; the exit code says whether it worked.
pub async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve => client::serve(&cli.global).await,
        Command::Run(args) => run::run(&cli.global, args).await,
        Command::Ingest(args) => client::ingest(&cli.global, args).await,
        Command::Jobs(args) => client::jobs(&cli.global, args).await,
        Command::Job(args) => client::job(&cli.global, &args.id).await,
        Command::Retry(args) => client::retry(&cli.global, &args.id).await,
        Command::Cancel(args) => client::cancel(&cli.global, &args.id).await,
        Command::Status => client::status(&cli.global).await,
        Command::Graph(args) => graph::graph(&cli.global, args).await,
        Command::Node(args) => graph::node(&cli.global, args).await,
        Command::Ambiguities(args) => graph::ambiguities(&cli.global, args).await,
        Command::Check { files } => check::check(&cli.global, &files),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("telha: {e:#}");
            ExitCode::FAILURE
        }
    }
}
