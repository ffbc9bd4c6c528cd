//! SIGINT/SIGTERM set a process-wide stop flag that the engine polls; nothing else happens in
//! the handler, which keeps it async-signal-safe.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// A handle on the process-wide stop flag.
#[derive(Debug, Clone, Copy)]
pub struct StopSignal {
    _private: (),
}

impl StopSignal {
    /// True once SIGINT or SIGTERM arrived (or `request` was called).
    #[inline]
    pub fn is_requested(&self) -> bool {
        STOP_REQUESTED.load(Ordering::Relaxed)
    }

    /// Asks the engine to stop, as a signal would (used for `--duration` and end of trace).
    pub fn request(&self) {
        STOP_REQUESTED.store(true, Ordering::Relaxed);
    }
}

extern "C" fn on_stop_signal(_signal: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::Relaxed);
}

/// Routes SIGINT and SIGTERM to the stop flag. Idempotent.
pub fn install_stop_signal_handlers() -> StopSignal {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: zeroed sigaction is a valid starting value; the handler only performs an
        // atomic store, which is async-signal-safe; sa_mask is initialised by sigemptyset.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    StopSignal { _private: () }
}
