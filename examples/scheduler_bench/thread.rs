//! The frame thread as the operating system sees it: its resource use, its CPU
//! time, the machine's CPUs, and pinning threads to CPUs (`--frame-cpu`).

use std::time::Duration;

/// The calling thread's resource use (`getrusage(RUSAGE_THREAD)`).
#[derive(Clone, Copy)]
pub(crate) struct ThreadUsage {
    user: Duration,
    system: Duration,
    minor_faults: i64,
    major_faults: i64,
    voluntary_switches: i64,
    involuntary_switches: i64,
}

impl ThreadUsage {
    #[cfg(target_os = "linux")]
    pub(crate) fn now() -> Option<Self> {
        // SAFETY: getrusage fills the one struct it is given; all-zero is a valid rusage.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0;
        let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        ok.then(|| Self {
            user: time(usage.ru_utime),
            system: time(usage.ru_stime),
            minor_faults: usage.ru_minflt,
            major_faults: usage.ru_majflt,
            voluntary_switches: usage.ru_nvcsw,
            involuntary_switches: usage.ru_nivcsw,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn now() -> Option<Self> {
        None
    }

    pub(crate) fn preempted_since(&self, before: Self) -> bool {
        self.involuntary_switches > before.involuntary_switches
    }

    pub(crate) fn since(&self, before: Self) -> String {
        let ms = |a: Duration, b: Duration| a.saturating_sub(b).as_secs_f64() * 1e3;
        format!(
            "user {:.3} ms, system {:.3} ms, page faults {} minor / {} major, context switches {} voluntary / {} involuntary",
            ms(self.user, before.user),
            ms(self.system, before.system),
            self.minor_faults - before.minor_faults,
            self.major_faults - before.major_faults,
            self.voluntary_switches - before.voluntary_switches,
            self.involuntary_switches - before.involuntary_switches,
        )
    }
}

/// Lets the calling thread run only on the CPUs `allowed` picks.
#[cfg(target_os = "linux")]
pub(crate) fn pin_this_thread(allowed: impl Fn(usize) -> bool) {
    let cpus = online_cpus();
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes inside it for
    // CPUs below CPU_SETSIZE, and sched_setaffinity reads the one set it is given.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in (0..cpus.min(libc::CPU_SETSIZE as usize)).filter(|&cpu| allowed(cpu)) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if !ok {
        eprintln!(
            "--frame-cpu: sched_setaffinity failed: {}",
            std::io::Error::last_os_error()
        );
        std::process::exit(2);
    }
}

/// The machine's CPUs, whatever this process may run on (which is what
/// `available_parallelism` counts, and `scripts/quiet-core.sh` narrows).
#[cfg(unix)]
pub(crate) fn online_cpus() -> usize {
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(cpus).unwrap_or(1).max(1)
}

#[cfg(not(unix))]
pub(crate) fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_this_thread(_allowed: impl Fn(usize) -> bool) {
    eprintln!("--frame-cpu needs Linux");
    std::process::exit(2);
}

/// CPU time the calling thread has run.
#[cfg(unix)]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, and `time` is one.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) } == 0;
    ok.then(|| Duration::new(time.tv_sec as u64, time.tv_nsec as u32))
}

#[cfg(not(unix))]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    None
}
