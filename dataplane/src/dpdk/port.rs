//! Ethernet ports: probing by devargs, queue setup, start/stop, MAC, link, stats, and the
//! per-queue RX/TX handles the workers own.

use super::{DpdkError, MbufBurst, Mempool};
use std::ffi::{CString, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const MAX_PORTS: usize = dpdk_sys::RTE_MAX_ETHPORTS as usize;

/// Bumped by DPDK's link-state-change interrupt callback, per port id.
static LINK_EVENTS: [AtomicU64; MAX_PORTS] = [const { AtomicU64::new(0) }; MAX_PORTS];

/// How to set a port up.
#[derive(Debug, Clone)]
pub struct PortConfig {
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    /// Set the MTU (L3 bytes) if the device supports it.
    pub mtu: Option<u16>,
    /// Receive frames not addressed to the port's MAC (switches need this).
    pub promiscuous: bool,
}

impl Default for PortConfig {
    fn default() -> Self {
        Self {
            rx_queues: 1,
            tx_queues: 1,
            rx_descriptors: 1024,
            tx_descriptors: 1024,
            mtu: None,
            promiscuous: true,
        }
    }
}

/// Link state as the PMD reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkStatus {
    pub up: bool,
    /// Mb/s; 0 when unknown.
    pub speed_mbps: u32,
}

/// Ethernet's MTU, ethdev's default for a device configured without one.
pub const DEFAULT_MTU: u16 = 1500;

/// What became of the MTU a port's config asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtuOutcome {
    /// Set as asked.
    Set(u16),
    /// The device takes at most `max` (a TAP device: 1500): set to that instead of `asked`.
    Limited { asked: u16, max: u16 },
    /// The device cannot change its MTU: left as it was.
    Unsupported { asked: u16 },
}

impl MtuOutcome {
    /// The MTU the switch routes to the port with: what the device took, or, where it could
    /// not change its MTU (a virtual device such as `net_pcap`, which carries any length),
    /// the configured one.
    pub fn routing_mtu(self) -> u16 {
        match self {
            MtuOutcome::Set(mtu) => mtu,
            MtuOutcome::Limited { max, .. } => max,
            MtuOutcome::Unsupported { asked } => asked,
        }
    }
}

/// Counters kept by the PMD (hardware counters on real NICs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Dropped by the device because RX descriptors were full.
    pub rx_missed: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    /// RX could not allocate an mbuf (the pool was too small or leaking).
    pub rx_nombuf: u64,
}

#[derive(Debug)]
struct PortShared {
    id: u16,
    label: String,
}

impl Drop for PortShared {
    fn drop(&mut self) {
        // SAFETY: the last holder (Port or queue handle) is gone, so no thread can be polling
        // this port's queues any more; stopping then closing a valid port id is allowed even
        // if it never started (DPDK returns an error we ignore). Close flushes pcap outputs.
        unsafe {
            dpdk_sys::rte_eth_dev_stop(self.id);
            dpdk_sys::rte_eth_dev_close(self.id);
        }
    }
}

/// One ethdev port. Its queues are handed out once each as `RxQueue`/`TxQueue`; the port is
/// stopped and closed when the `Port` and all its queue handles are dropped.
#[derive(Debug)]
pub struct Port {
    shared: Arc<PortShared>,
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
    /// A kernel interface's carrier file (`/sys/class/net/IF/carrier`) for a device whose
    /// PMD reports its link up whatever the kernel interface's state (net_af_packet in DPDK
    /// 22.11): `link` reads the carrier too.
    carrier: Option<std::path::PathBuf>,
}

/// The kernel interface a `net_af_packet` device is attached to (`iface=`), whose carrier
/// tells its link state.
fn af_packet_iface(devargs: &str) -> Option<&str> {
    let mut parts = devargs.split(',');
    let driver = parts.next()?.trim();
    if !(driver.starts_with("net_af_packet") || driver.starts_with("eth_af_packet")) {
        return None;
    }
    parts.find_map(|p| p.trim().strip_prefix("iface="))
}

unsafe extern "C" fn on_link_state_change(
    port_id: u16,
    _event: dpdk_sys::rte_eth_event_type,
    _cb_arg: *mut c_void,
    _ret_param: *mut c_void,
) -> c_int {
    if let Some(counter) = LINK_EVENTS.get(usize::from(port_id)) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    0
}

impl Port {
    /// Attaches the device described by `devargs` (a vdev such as `net_pcap0,rx_pcap=a.pcap`
    /// or a PCI address such as `0000:3b:00.0`) and finds its ethdev port. `label` names the
    /// port in errors.
    pub fn probe(label: &str, devargs: &str) -> Result<Port, DpdkError> {
        let c_devargs = CString::new(devargs)
            .map_err(|_| DpdkError::new("rte_dev_probe", label, libc::EINVAL))?;
        // SAFETY: c_devargs is a valid NUL-terminated string for the call's duration.
        let ret = unsafe { dpdk_sys::rte_dev_probe(c_devargs.as_ptr()) };
        if ret < 0 {
            // A driver's probe that fails returns -1 (net_pcap on a file it cannot open, for
            // one), which is no errno ("Operation not permitted" would mislead): the reason
            // is in the driver's log line.
            let errno = if ret == -1 { 0 } else { ret };
            return Err(DpdkError::new(
                "rte_dev_probe",
                format!("port {label} (devargs \"{devargs}\")"),
                errno,
            ));
        }
        let device = devargs.split(',').next().unwrap_or(devargs).trim();
        let id = find_port_id(device)
            .or_else(|| find_port_id(&format!("0000:{device}")))
            .ok_or_else(|| {
                DpdkError::new(
                    "rte_eth_dev_get_port_by_name",
                    format!("port {label} (device \"{device}\" created no ethdev port)"),
                    libc::ENODEV,
                )
            })?;
        let shared = Arc::new(PortShared {
            id,
            label: label.to_owned(),
        });
        Ok(Port {
            shared,
            rx_taken: Vec::new(),
            tx_taken: Vec::new(),
            carrier: af_packet_iface(devargs).map(|iface| {
                std::path::Path::new("/sys/class/net")
                    .join(iface)
                    .join("carrier")
            }),
        })
    }

    /// The DPDK port id.
    pub fn id(&self) -> u16 {
        self.shared.id
    }

    /// The name the configuration gave the port.
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// The device's facts (limits, flags).
    fn info(&self) -> Result<dpdk_sys::rte_eth_dev_info, DpdkError> {
        let mut info = dpdk_sys::rte_eth_dev_info::default();
        // SAFETY: `info` is a valid out-parameter; id is a probed port.
        let ret = unsafe { dpdk_sys::rte_eth_dev_info_get(self.shared.id, &mut info) };
        if ret != 0 {
            return Err(DpdkError::new(
                "rte_eth_dev_info_get",
                self.shared.label.clone(),
                ret,
            ));
        }
        Ok(info)
    }

    /// The MTU the port will have when `asked` is configured: `asked`, or the device's
    /// largest when it takes less (what `configure_and_start` sets).
    pub fn mtu_for(&self, asked: u16) -> Result<u16, DpdkError> {
        let info = self.info()?;
        Ok(asked.min(largest_mtu(info.max_mtu, info.max_rx_pktlen).max(info.min_mtu)))
    }

    /// Configures queues (descriptor counts clamped to what the device allows), MTU (clamped
    /// likewise: what became of it is returned) and link-state interrupts, then starts the
    /// port.
    pub fn configure_and_start(
        &mut self,
        config: &PortConfig,
        pool: &Mempool,
    ) -> Result<Option<MtuOutcome>, DpdkError> {
        let id = self.shared.id;
        let label = self.shared.label.clone();
        let info = self.info()?;
        // SAFETY: dev_flags points into the device's data, valid while the port exists.
        let supports_lsc = unsafe {
            !info.dev_flags.is_null() && (*info.dev_flags & dpdk_sys::RTE_ETH_DEV_INTR_LSC) != 0
        };

        let mut conf = dpdk_sys::rte_eth_conf::default();
        if supports_lsc {
            conf.intr_conf.set_lsc(1);
        }
        // SAFETY: conf is a valid, fully initialised configuration struct.
        let ret = unsafe {
            dpdk_sys::rte_eth_dev_configure(id, config.rx_queues, config.tx_queues, &conf)
        };
        if ret != 0 {
            return Err(DpdkError::new("rte_eth_dev_configure", label, ret));
        }
        let mut rx_desc = config.rx_descriptors;
        let mut tx_desc = config.tx_descriptors;
        // SAFETY: valid out-pointers to locals.
        let ret =
            unsafe { dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut rx_desc, &mut tx_desc) };
        if ret != 0 {
            return Err(DpdkError::new(
                "rte_eth_dev_adjust_nb_rx_tx_desc",
                label,
                ret,
            ));
        }
        // SAFETY: plain query of a valid port.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id) };
        let socket = u32::try_from(socket).unwrap_or(u32::MAX); // SOCKET_ID_ANY
        for queue in 0..config.rx_queues {
            // SAFETY: the pool outlives the port's use of it (the engine frees pools after
            // closing ports); NULL rxconf selects the device defaults.
            let ret = unsafe {
                dpdk_sys::rte_eth_rx_queue_setup(
                    id,
                    queue,
                    rx_desc,
                    socket,
                    std::ptr::null(),
                    pool.as_ptr(),
                )
            };
            if ret != 0 {
                return Err(DpdkError::new("rte_eth_rx_queue_setup", label, ret));
            }
        }
        for queue in 0..config.tx_queues {
            // SAFETY: NULL txconf selects the device defaults.
            let ret = unsafe {
                dpdk_sys::rte_eth_tx_queue_setup(id, queue, tx_desc, socket, std::ptr::null())
            };
            if ret != 0 {
                return Err(DpdkError::new("rte_eth_tx_queue_setup", label, ret));
            }
        }
        let mtu = match config.mtu {
            None => None,
            Some(asked) => {
                // Asking for more than the device takes fails: ask for what it takes.
                let mtu = self.mtu_for(asked)?;
                // SAFETY: plain call on a configured port.
                let ret = unsafe { dpdk_sys::rte_eth_dev_set_mtu(id, mtu) };
                if ret == -libc::ENOTSUP {
                    Some(MtuOutcome::Unsupported { asked })
                } else if ret != 0 {
                    return Err(DpdkError::new("rte_eth_dev_set_mtu", label, ret));
                } else if mtu < asked {
                    Some(MtuOutcome::Limited { asked, max: mtu })
                } else {
                    Some(MtuOutcome::Set(mtu))
                }
            }
        };
        if supports_lsc {
            // SAFETY: the callback is a plain function with a static lifetime and ignores
            // its argument.
            unsafe {
                dpdk_sys::rte_eth_dev_callback_register(
                    id,
                    dpdk_sys::rte_eth_event_type_RTE_ETH_EVENT_INTR_LSC,
                    Some(on_link_state_change),
                    std::ptr::null_mut(),
                );
            }
        }
        // SAFETY: all queues are set up.
        let ret = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        if ret != 0 {
            return Err(DpdkError::new("rte_eth_dev_start", label, ret));
        }
        if config.promiscuous {
            // Not every PMD supports it (net_pcap does not); forwarding still works there.
            // SAFETY: plain call on a started port.
            unsafe { dpdk_sys::rte_eth_promiscuous_enable(id) };
        }
        self.rx_taken = vec![false; usize::from(config.rx_queues)];
        self.tx_taken = vec![false; usize::from(config.tx_queues)];
        Ok(mtu)
    }

    /// Hands out RX queue `queue`, once. DPDK queues are single-threaded, so the handle is
    /// the only way to poll the queue.
    pub fn take_rx_queue(&mut self, queue: u16) -> Option<RxQueue> {
        let slot = self.rx_taken.get_mut(usize::from(queue))?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(RxQueue {
            port: self.shared.id,
            queue,
            _shared: Arc::clone(&self.shared),
        })
    }

    /// Hands out TX queue `queue`, once.
    pub fn take_tx_queue(&mut self, queue: u16) -> Option<TxQueue> {
        let slot = self.tx_taken.get_mut(usize::from(queue))?;
        if std::mem::replace(slot, true) {
            return None;
        }
        Some(TxQueue {
            port: self.shared.id,
            queue,
            _shared: Arc::clone(&self.shared),
        })
    }

    /// The port's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        let mut addr = dpdk_sys::rte_ether_addr::default();
        // SAFETY: valid out-pointer; on failure addr stays zero.
        unsafe { dpdk_sys::rte_eth_macaddr_get(self.shared.id, &mut addr) };
        addr.addr_bytes
    }

    /// The MTU the device has now (L3 bytes; ethdev's 1500 unless one was set), or 1500
    /// when the device cannot tell.
    pub fn mtu(&self) -> u16 {
        let mut mtu: u16 = 0;
        // SAFETY: valid out-pointer to a u16 the call writes on success only.
        let ret = unsafe { dpdk_sys::rte_eth_dev_get_mtu(self.shared.id, &mut mtu) };
        if ret == 0 && mtu != 0 {
            mtu
        } else {
            DEFAULT_MTU
        }
    }

    /// Link state without waiting for autonegotiation.
    pub fn link(&self) -> LinkStatus {
        let mut link = dpdk_sys::rte_eth_link::default();
        // SAFETY: valid out-pointer; on failure link stays zero (down).
        unsafe { dpdk_sys::rte_eth_link_get_nowait(self.shared.id, &mut link) };
        let speed = link.link_speed;
        // The kernel interface's carrier: "1" up, "0" down; unreadable while the interface
        // is administratively down, which is down too.
        let carrier_up = self
            .carrier
            .as_ref()
            .is_none_or(|path| std::fs::read_to_string(path).is_ok_and(|text| text.trim() == "1"));
        LinkStatus {
            up: link.link_status() != 0 && carrier_up,
            speed_mbps: if speed == dpdk_sys::RTE_ETH_SPEED_NUM_UNKNOWN {
                0
            } else {
                speed
            },
        }
    }

    /// How many link-state-change interrupts the device raised (0 for devices without them;
    /// the control lcore also polls `link`).
    pub fn link_events(&self) -> u64 {
        LINK_EVENTS
            .get(usize::from(self.shared.id))
            .map_or(0, |counter| counter.load(Ordering::Relaxed))
    }

    /// The PMD's counters.
    pub fn stats(&self) -> PortStats {
        let mut raw = dpdk_sys::rte_eth_stats::default();
        // SAFETY: valid out-pointer; reading counters is allowed while queues run.
        unsafe { dpdk_sys::rte_eth_stats_get(self.shared.id, &mut raw) };
        PortStats {
            rx_packets: raw.ipackets,
            rx_bytes: raw.ibytes,
            tx_packets: raw.opackets,
            tx_bytes: raw.obytes,
            rx_missed: raw.imissed,
            rx_errors: raw.ierrors,
            tx_errors: raw.oerrors,
            rx_nombuf: raw.rx_nombuf,
        }
    }
}

/// The largest MTU `rte_eth_dev_set_mtu` accepts, by ethdev's rule (22.11,
/// `eth_dev_validate_mtu`): at most `max_mtu`, and the frame (MTU plus the device's overhead)
/// at most `max_rx_pktlen`. The overhead is `max_rx_pktlen - max_mtu` when the device states
/// a `max_mtu` below it, else Ethernet's header and CRC (18 bytes). A TAP device (1522-byte
/// frames, no `max_mtu`) takes 1504.
fn largest_mtu(max_mtu: u16, max_rx_pktlen: u32) -> u16 {
    let overhead = if max_mtu != u16::MAX && max_rx_pktlen > u32::from(max_mtu) {
        max_rx_pktlen - u32::from(max_mtu)
    } else {
        18
    };
    let by_frame = max_rx_pktlen.saturating_sub(overhead);
    u16::try_from(by_frame).map_or(max_mtu, |f| f.min(max_mtu))
}

fn find_port_id(device: &str) -> Option<u16> {
    let name = CString::new(device).ok()?;
    let mut id: u16 = 0;
    // SAFETY: valid string and out-pointer.
    let ret = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(name.as_ptr(), &mut id) };
    (ret == 0).then_some(id)
}

/// The right to poll one RX queue. Not `Clone`: DPDK queues must not be polled concurrently.
#[derive(Debug)]
pub struct RxQueue {
    port: u16,
    queue: u16,
    _shared: Arc<PortShared>,
}

impl RxQueue {
    pub fn port_id(&self) -> u16 {
        self.port
    }

    /// Receives at most `max` packets into the free slots of `burst`; returns how many
    /// arrived.
    #[inline]
    pub fn rx_burst(&mut self, burst: &mut MbufBurst, max: usize) -> usize {
        let (slots, room) = burst.spare();
        let room = room.min(max);
        // SAFETY: this handle is the queue's only poller (&mut self, not Clone); `slots`
        // points at `room` writable pointer slots inside the burst; DPDK writes at most
        // `room` owned mbuf pointers there, which commit() then records as owned.
        let received =
            unsafe { dpdk_sys::rte_eth_rx_burst(self.port, self.queue, slots, room as u16) };
        let received = usize::from(received);
        burst.commit(received);
        received
    }
}

/// The right to transmit on one TX queue. Not `Clone`, for the same reason as `RxQueue`.
#[derive(Debug)]
pub struct TxQueue {
    port: u16,
    queue: u16,
    _shared: Arc<PortShared>,
}

impl TxQueue {
    pub fn port_id(&self) -> u16 {
        self.port
    }

    /// Transmits from the front of `burst`; packets the device did not take stay in `burst`
    /// (in order) for the caller to retry or drop. Returns how many were sent.
    #[inline]
    pub fn tx_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let count = burst.len() as u16;
        if count == 0 {
            return 0;
        }
        // SAFETY: this handle is the queue's only user; the burst's first `count` slots are
        // owned mbufs; DPDK takes ownership of the first `sent` of them, which
        // consume_front then forgets.
        let sent =
            unsafe { dpdk_sys::rte_eth_tx_burst(self.port, self.queue, burst.as_mut_ptr(), count) };
        let sent = usize::from(sent);
        burst.consume_front(sent);
        sent
    }

    /// Transmits `burst` and frees whatever the device did not take. Returns (sent, freed).
    #[inline]
    pub fn tx_burst_or_free(&mut self, burst: &mut MbufBurst) -> (usize, usize) {
        let sent = self.tx_burst(burst);
        let freed = burst.len();
        burst.clear();
        (sent, freed)
    }
}

#[cfg(test)]
mod tests {
    use super::{af_packet_iface, largest_mtu};

    #[test]
    fn an_af_packet_devices_kernel_interface_is_found_in_its_devargs() {
        assert_eq!(af_packet_iface("net_af_packet0,iface=veth1"), Some("veth1"));
        assert_eq!(
            af_packet_iface("net_af_packet3,qpairs=1,iface=h1-eth0,framesz=2048"),
            Some("h1-eth0")
        );
        assert_eq!(af_packet_iface("eth_af_packet0,iface=x"), Some("x"));
        assert_eq!(af_packet_iface("net_tap0,iface=x"), None);
        assert_eq!(af_packet_iface("net_af_packet0"), None);
    }

    #[test]
    fn the_largest_mtu_follows_ethdevs_rule() {
        // TAP: 1522-byte frames (VLAN-tagged 1500), no max_mtu stated: 1522 - 18.
        assert_eq!(largest_mtu(u16::MAX, 1522), 1504);
        // A NIC stating both: its max_mtu, the overhead being the difference.
        assert_eq!(largest_mtu(9600, 9628), 9600);
        // A max_mtu above what the frame length allows with 18 bytes of overhead.
        assert_eq!(largest_mtu(9600, 9000), 9000 - 18);
        // Frames longer than any u16 MTU: max_mtu decides.
        assert_eq!(largest_mtu(u16::MAX, 100_000), u16::MAX);
    }
}
