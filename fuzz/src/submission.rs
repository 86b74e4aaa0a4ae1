//! AFL++ entry point (`cargo afl build --features afl`, then `cargo afl fuzz`): every
//! input goes through the wire parser and validator; a panic is a crash AFL keeps.
mod check;

fn main() {
    afl::fuzz!(|data: &[u8]| {
        check::check(data);
    });
}
