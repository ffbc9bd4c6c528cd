//! EAL initialisation (once per process) and the mbuf rx-timestamp dynamic field.

use super::DpdkError;
use std::ffi::{CString, c_char, c_int};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static EAL_STARTED: AtomicBool = AtomicBool::new(false);
static RX_TIMESTAMP: OnceLock<RxTimestamp> = OnceLock::new();

/// Where PMDs store a received packet's timestamp in the mbuf, and the flag that says it is set.
/// The pcap PMD fills it with the packet's pcap time in microseconds (DPDK 22.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxTimestamp {
    pub(crate) offset: usize,
    pub(crate) flag: u64,
}

/// The initialised Environment Abstraction Layer. Only one can exist in a process, and DPDK
/// cannot be re-initialised after `cleanup`, so tests start one process per DPDK run.
#[derive(Debug)]
pub struct Eal {
    _private: (),
}

impl Eal {
    /// Initialises the EAL from an argument list (the first element is the program name, as in
    /// `argv`). Registers the rx-timestamp dynamic field so `Mbuf::rx_timestamp` works.
    pub fn init<S: AsRef<str>>(args: &[S]) -> Result<Eal, DpdkError> {
        if EAL_STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::new(
                "rte_eal_init",
                "a second EAL in one process",
                libc::EALREADY,
            ));
        }
        let owned: Vec<CString> = args
            .iter()
            .map(|arg| CString::new(arg.as_ref()))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                DpdkError::new("rte_eal_init", "an argument containing NUL", libc::EINVAL)
            })?;
        // rte_eal_init may permute argv and keeps pointers into it for the process lifetime
        // (e.g. for rte_eal_init's program name), so the strings are deliberately leaked.
        let mut argv: Vec<*mut c_char> = owned.into_iter().map(|arg| arg.into_raw()).collect();
        let argc = c_int::try_from(argv.len()).expect("argument count fits in c_int");
        argv.push(std::ptr::null_mut());
        let argv = argv.leak();
        // SAFETY: argv holds argc valid NUL-terminated strings followed by NULL, and lives for
        // the rest of the process (leaked above); EAL_STARTED guarantees a single call.
        let ret = unsafe { dpdk_sys::rte_eal_init(argc, argv.as_mut_ptr()) };
        if ret < 0 {
            return Err(DpdkError::from_rte_errno(
                "rte_eal_init",
                "the EAL arguments",
            ));
        }

        let mut offset: c_int = -1;
        let mut flag: u64 = 0;
        // SAFETY: both out-pointers are valid locals; the call only registers a dynfield.
        let ret = unsafe { dpdk_sys::rte_mbuf_dyn_rx_timestamp_register(&mut offset, &mut flag) };
        if ret < 0 || offset < 0 {
            return Err(DpdkError::from_rte_errno(
                "rte_mbuf_dyn_rx_timestamp_register",
                "",
            ));
        }
        let offset = usize::try_from(offset).expect("checked non-negative");
        let _ = RX_TIMESTAMP.set(RxTimestamp { offset, flag });
        Ok(Eal { _private: () })
    }

    /// Releases EAL resources, then removes this process's runtime directory
    /// (`/var/run/dpdk/<file-prefix>`), which DPDK 22.11 leaves behind. Ports and mempools
    /// must be closed and freed first.
    pub fn cleanup(self) {
        // SAFETY: returns a pointer to a static NUL-terminated path owned by the EAL; copied
        // at once, before cleanup.
        let runtime_dir = unsafe {
            let dir = dpdk_sys::rte_eal_get_runtime_dir();
            (!dir.is_null()).then(|| std::ffi::CStr::from_ptr(dir).to_string_lossy().into_owned())
        };
        // SAFETY: consumes the only Eal; no DPDK object is used after this by our types, which
        // are all dropped before (the engine owns them and returns before cleanup).
        unsafe {
            dpdk_sys::rte_eal_cleanup();
        }
        if let Some(dir) = runtime_dir.filter(|d| d.contains("/dpdk/")) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

pub(crate) fn rx_timestamp_field() -> Option<RxTimestamp> {
    RX_TIMESTAMP.get().copied()
}
