//! Replays files (AFL's queue, its crashes, or any corpus) through the same check on a
//! plain build: `replay DIR_OR_FILE...`. Prints how many inputs ran and exits non-zero
//! if any panicked, naming it.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod check;

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path).into_iter().flatten().flatten().map(|e| e.path()).collect();
        entries.sort();
        for entry in entries {
            files(&entry, out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

fn main() -> ExitCode {
    let mut inputs = Vec::new();
    for arg in std::env::args_os().skip(1) {
        files(Path::new(&arg), &mut inputs);
    }
    let mut panicked = Vec::new();
    for path in &inputs {
        let Ok(data) = std::fs::read(path) else { continue };
        if std::panic::catch_unwind(|| check::check(&data)).is_err() {
            panicked.push(path.display().to_string());
        }
    }
    println!("{{\"replayed\": {}, \"panicked\": {}}}", inputs.len(), panicked.len());
    for path in &panicked {
        eprintln!("panicked: {path}");
    }
    if panicked.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
