//! Reading a process's resource use from /proc and adjusting its CPU limit.
use std::fs;

/// Resident bytes of every process in process group `pgid` (the worker and its
/// children, e.g. a browser). 0 when the group is gone.
pub fn group_rss_bytes(pgid: u32) -> u64 {
    let page = page_size();
    let Ok(dir) = fs::read_dir("/proc") else { return 0 };
    let mut total = 0u64;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if stat_pgrp(pid) == Some(pgid) {
            total += resident_pages(pid).unwrap_or(0) * page;
        }
    }
    total
}

/// The high-water mark of a process's resident size (VmHWM), if it is still there.
pub fn peak_rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn stat_pgrp(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

fn resident_pages(pid: u32) -> Option<u64> {
    let statm = fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    statm.split_whitespace().nth(1)?.parse().ok()
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(v).unwrap_or(4096)
}

/// CPU seconds process `pid` has used, from the clock the kernel checks RLIMIT_CPU against.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: plain syscalls with valid out-pointers.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0 {
            return None;
        }
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
    }
}

/// Gives process `pid` `budget` more CPU seconds from now (the soft RLIMIT_CPU), so
/// the limit counts per job rather than over the worker's whole life. The hard limit
/// is left alone: it cannot be raised again once lowered.
pub fn grant_cpu(pid: u32, budget: u64) -> std::io::Result<()> {
    let used = cpu_secs(pid).ok_or_else(|| std::io::Error::other("cannot read the process CPU clock"))?;
    let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: prlimit with a null new limit only reads.
    if unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_CPU, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let soft = ((used + budget as f64).ceil() as u64).min(old.rlim_max);
    let new = libc::rlimit { rlim_cur: soft, rlim_max: old.rlim_max };
    // SAFETY: valid pointer to a fully initialised rlimit.
    if unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_CPU, &new, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
