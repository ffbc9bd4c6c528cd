//! Priority flow control (IEEE 802.1Qbb) and 802.3x PAUSE: the MAC Control frame layout, pause
//! durations, and the SONiC-style headroom calculator (REFERENCE.md section 1).

use super::{PortSpeed, TC_COUNT};
use crate::clock::Picos;

/// 01:80:C2:00:00:01, the reserved MAC Control destination of PAUSE and PFC.
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;
/// A pause quantum is 512 bit times.
pub const BITS_PER_QUANTUM: u64 = 512;
/// The quanta of an XOFF: the longest pause, refreshed while the port stays above XON.
pub const XOFF_QUANTA: u16 = 0xffff;
/// PFC frames are padded to the 60-byte minimum (64 on the wire with the FCS).
pub const FRAME_LEN: usize = 60;

/// A MAC Control frame as the switch acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.1Qbb: `enable` bit n says `quanta[n]` is valid for priority (TC) n.
    Pfc { enable: u8, quanta: [u16; TC_COUNT] },
    /// 802.3x PAUSE: the whole port.
    Pause { quanta: u16 },
    /// Another opcode, or too short to read: consumed and counted, nothing else.
    Other,
}

/// Reads a MAC Control frame (EtherType 0x8808, untagged). `None` if it is not one.
pub fn parse(frame: &[u8]) -> Option<MacControl> {
    if frame.len() < 14 || u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_MAC_CONTROL {
        return None;
    }
    let word = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    Some(match word(14) {
        Some(OPCODE_PFC) if frame.len() >= 34 => {
            let enable = frame[17];
            let quanta = std::array::from_fn(|n| word(18 + 2 * n).unwrap_or(0));
            MacControl::Pfc { enable, quanta }
        }
        Some(OPCODE_PAUSE) if frame.len() >= 18 => MacControl::Pause {
            quanta: word(16).unwrap_or(0),
        },
        _ => MacControl::Other,
    })
}

/// Builds a PFC frame from `src`: for each TC with bit n of `enable` set, `quanta[n]`; the other
/// time fields are zero.
pub fn encode(src: [u8; 6], enable: u8, quanta: [u16; TC_COUNT]) -> [u8; FRAME_LEN] {
    let mut frame = [0u8; FRAME_LEN];
    frame[0..6].copy_from_slice(&MAC_CONTROL_DST);
    frame[6..12].copy_from_slice(&src);
    frame[12..14].copy_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
    frame[14..16].copy_from_slice(&OPCODE_PFC.to_be_bytes());
    frame[16..18].copy_from_slice(&u16::from(enable).to_be_bytes());
    for (n, q) in quanta.iter().enumerate() {
        let q = if enable & (1 << n) != 0 { *q } else { 0 };
        frame[18 + 2 * n..20 + 2 * n].copy_from_slice(&q.to_be_bytes());
    }
    frame
}

/// How long `quanta` pause a link of `speed`: quanta × 512 bit times (0 when unlimited).
pub fn pause_time(quanta: u16, speed: PortSpeed) -> Picos {
    match speed {
        // bits * 1000 / Gb/s = picoseconds; exact for every speed that divides 512000.
        PortSpeed::Gbps(gbps) => {
            u64::from(quanta) * BITS_PER_QUANTUM * 1000 / u64::from(gbps.max(1))
        }
        PortSpeed::Unlimited => 0,
    }
}

/// Peer response time in pause quanta per port speed (IEEE 802.3 31B.3.7, as SONiC uses it).
pub fn peer_response_quanta(gbps: u32) -> u64 {
    match gbps {
        400.. => 905,
        200.. => 453,
        100.. => 394,
        50.. => 147,
        40.. => 118,
        25.. => 80,
        10.. => 67,
        _ => 2,
    }
}

/// Signal speed in cable (m/s), as SONiC's headroom calculator takes it.
pub const CABLE_METRES_PER_SECOND: u64 = 198_000_000;

/// What a port's PFC thresholds are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadroomInputs {
    pub gbps: u32,
    pub cable_m: u32,
    /// The largest frame the port carries (its MTU plus L2 header).
    pub mtu: u32,
}

/// Thresholds of one lossless (port, TC), in bytes of ingress occupancy (DESIGN.md words): the
/// switch sends XOFF when the occupancy reaches `xoff`, XON when it falls below `xon`, and keeps
/// `headroom` above `xoff` for what is still in flight when the peer stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcThresholds {
    pub xoff: u64,
    pub xon: u64,
    pub headroom: u64,
}

/// The largest threshold a (port, TC) may have, 16 GiB (also the largest buffer): it keeps
/// `xoff + headroom`, the lossless admission limit, from overflowing.
pub const MAX_PFC_BYTES: u64 = 1 << 34;
/// The smallest frame with its FCS: headroom below it holds nothing.
pub const MIN_PFC_HEADROOM: u64 = 64;

/// Why `xoff` bytes cannot be an XOFF threshold, if they cannot.
pub fn check_xoff(xoff: u64) -> Result<(), String> {
    if xoff == 0 {
        return Err(
            "0 bytes: XOFF is sent when the ingress bytes reach xoff, so the peer would \
                    be paused with nothing held, and XON (below xoff) could never follow; give \
                    at least 1 byte"
                .to_owned(),
        );
    }
    check_size(xoff)
}

/// Why `xon` bytes cannot be an XON threshold, if they cannot.
pub fn check_xon(xon: u64) -> Result<(), String> {
    if xon == 0 {
        return Err(
            "0 bytes: XON is sent when the ingress bytes fall below xon, and nothing is \
                    below 0, so XON would never be sent and the peer would stay paused (until \
                    the watchdog); give at least 1 byte (1 resumes when the TC is empty)"
                .to_owned(),
        );
    }
    check_size(xon)
}

/// Why `headroom` bytes cannot be a lossless TC's headroom, if they cannot.
pub fn check_headroom(headroom: u64) -> Result<(), String> {
    if headroom < MIN_PFC_HEADROOM {
        return Err(format!(
            "{headroom} bytes cannot hold one {MIN_PFC_HEADROOM}-byte frame above xoff: every \
             frame still in flight after XOFF would be dropped, so the TC would not be \
             lossless; give at least {MIN_PFC_HEADROOM} bytes"
        ));
    }
    check_size(headroom)
}

/// Why an XON threshold of `xon` cannot go with an XOFF threshold of `xoff`, if it cannot.
pub fn check_xon_below_xoff(xoff: u64, xon: u64) -> Result<(), String> {
    if xon > xoff {
        return Err(format!(
            "{xon} is above xoff ({xoff}): XON must be at or below XOFF"
        ));
    }
    Ok(())
}

fn check_size(bytes: u64) -> Result<(), String> {
    if bytes > MAX_PFC_BYTES {
        return Err(format!(
            "{bytes} bytes is above the largest buffer ({MAX_PFC_BYTES})"
        ));
    }
    Ok(())
}

impl PfcThresholds {
    /// Why these cannot be a lossless TC's thresholds, if they cannot: the key at fault
    /// (`xoff`, `xon` or `headroom`) and the reason (`check_xoff` and the others: the config,
    /// the control API and the traffic manager apply the same rules).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        check_xoff(self.xoff).map_err(|m| ("xoff", m))?;
        check_xon(self.xon).map_err(|m| ("xon", m))?;
        check_headroom(self.headroom).map_err(|m| ("headroom", m))?;
        check_xon_below_xoff(self.xoff, self.xon).map_err(|m| ("xon", m))
    }
}

impl HeadroomInputs {
    /// Bytes the link carries during one round trip of the cable.
    pub fn bytes_on_cable(&self) -> u64 {
        2 * u64::from(self.cable_m) * u64::from(self.gbps) * 1_000_000_000
            / CABLE_METRES_PER_SECOND
            / 8
    }

    /// Bytes the peer still sends while it reacts: its response quanta × 512 bits.
    pub fn peer_response_bytes(&self) -> u64 {
        peer_response_quanta(self.gbps) * BITS_PER_QUANTUM / 8
    }

    /// SONiC's headroom ("xoff" in its words): one MTU already started, plus the propagation
    /// delay (an MTU, the cable round trip, the peer's response), rounded up to 1024 bytes.
    pub fn headroom(&self) -> u64 {
        let propagation = u64::from(self.mtu) + self.bytes_on_cable() + self.peer_response_bytes();
        (u64::from(self.mtu) + propagation).div_ceil(1024) * 1024
    }

    /// The automatic thresholds: XOFF at the headroom size (the port may hold as much as is in
    /// flight before asking to pause), XON two MTUs below it (at least one MTU), so the queue
    /// never runs dry while the resume crosses the cable.
    pub fn auto(&self) -> PfcThresholds {
        let headroom = self.headroom();
        let xoff = headroom;
        let xon = xoff
            .saturating_sub(2 * u64::from(self.mtu))
            .max(u64::from(self.mtu));
        PfcThresholds {
            xoff,
            xon,
            headroom,
        }
    }

    /// The time between the switch sending a PFC frame and the peer stopping: the cable round
    /// trip plus the peer's response time (what replay's emulated peer waits).
    pub fn peer_delay(&self) -> Picos {
        let cable =
            2 * u64::from(self.cable_m) * crate::clock::PICOS_PER_SECOND / CABLE_METRES_PER_SECOND;
        cable
            + pause_time(
                peer_response_quanta(self.gbps) as u16,
                PortSpeed::Gbps(self.gbps),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_frame_matches_the_802_1qbb_layout() {
        let src = [0x02, 0, 0, 0, 0x01, 0x05];
        let mut quanta = [0u16; 8];
        quanta[3] = 0xffff;
        quanta[4] = 0x1234;
        quanta[5] = 7; // not enabled: must be written as 0
        let f = encode(src, (1 << 3) | (1 << 4), quanta);
        assert_eq!(f.len(), 60, "padded to the minimum frame");
        assert_eq!(&f[0..6], &[0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
        assert_eq!(&f[6..12], &src);
        assert_eq!(&f[12..14], &[0x88, 0x08]);
        assert_eq!(&f[14..16], &[0x01, 0x01]);
        assert_eq!(&f[16..18], &[0x00, 0b0001_1000], "class-enable vector");
        assert_eq!(&f[18..24], &[0; 6], "time[0..2]");
        assert_eq!(&f[24..26], &[0xff, 0xff], "time[3]");
        assert_eq!(&f[26..28], &[0x12, 0x34], "time[4]");
        assert_eq!(&f[28..34], &[0; 6], "time[5..7]");
        assert!(f[34..].iter().all(|&b| b == 0), "pad");
        let mut want = [0u16; 8];
        want[3] = 0xffff;
        want[4] = 0x1234;
        assert_eq!(
            parse(&f),
            Some(MacControl::Pfc {
                enable: 0b0001_1000,
                quanta: want
            })
        );
    }

    #[test]
    fn pause_and_other_opcodes_and_short_frames() {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&MAC_CONTROL_DST);
        f[12..14].copy_from_slice(&[0x88, 0x08]);
        f[14..16].copy_from_slice(&[0x00, 0x01]);
        f[16..18].copy_from_slice(&[0x01, 0x00]);
        assert_eq!(parse(&f), Some(MacControl::Pause { quanta: 256 }));
        f[15] = 0x02;
        assert_eq!(parse(&f), Some(MacControl::Other));
        f[14..16].copy_from_slice(&[0x01, 0x01]);
        assert_eq!(parse(&f[..20]), Some(MacControl::Other), "truncated PFC");
        assert_eq!(parse(&f[..13]), None);
        f[12] = 0x08;
        f[13] = 0x00;
        assert_eq!(parse(&f), None, "IPv4 is not MAC Control");
    }

    #[test]
    fn pause_time_is_quanta_times_512_bit_times() {
        // REFERENCE.md 1.1: one quantum is 51.2 ns at 10G, 5.12 ns at 100G, 1.28 ns at 400G;
        // 0xFFFF quanta are 335.5 us at 100G.
        assert_eq!(pause_time(1, PortSpeed::Gbps(10)), 51_200);
        assert_eq!(pause_time(1, PortSpeed::Gbps(100)), 5_120);
        assert_eq!(pause_time(1, PortSpeed::Gbps(400)), 1_280);
        assert_eq!(pause_time(0xffff, PortSpeed::Gbps(100)), 335_539_200);
        assert_eq!(pause_time(0, PortSpeed::Gbps(100)), 0);
    }

    #[test]
    fn headroom_follows_the_worked_example() {
        // REFERENCE.md 1.2: 100G, 100 m: bytes on cable = 2*100*1e11/1.98e8/8 = 12626 bytes;
        // peer response 394 * 64 = 25216; with a 9100-byte MTU the propagation delay is
        // 9100 + 12626 + 25216 = 46942 (about 47 KB) and xoff (our headroom) is
        // 9100 + 46942 = 56042, rounded up to 1024: 56320 (about 56 KB).
        let inputs = HeadroomInputs {
            gbps: 100,
            cable_m: 100,
            mtu: 9100,
        };
        assert_eq!(inputs.bytes_on_cable(), 12_626);
        assert_eq!(inputs.peer_response_bytes(), 25_216);
        assert_eq!(inputs.headroom(), 56_320);
        let auto = inputs.auto();
        assert_eq!(auto.headroom, 56_320);
        assert_eq!(auto.xoff, 56_320);
        assert_eq!(auto.xon, 56_320 - 18_200);
        // Round trip 2 * 100 m at 1.98e8 m/s = 1010.1 ns, plus 394 quanta at 100G = 2017.28 ns.
        assert_eq!(inputs.peer_delay(), 1_010_101 + 2_017_280);
    }

    #[test]
    fn peer_response_quanta_per_speed() {
        for (gbps, quanta) in [
            (400, 905),
            (200, 453),
            (100, 394),
            (50, 147),
            (40, 118),
            (25, 80),
            (10, 67),
        ] {
            assert_eq!(peer_response_quanta(gbps), quanta);
        }
    }
}
