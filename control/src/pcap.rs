//! Minimal pcap (libpcap classic format) reading and writing for traces and test outputs.
//! Reads microsecond and nanosecond files in either byte order (the DPDK pcap PMD writes
//! nanosecond files); writes microsecond files, which the pcap PMD reads.

use std::fmt;
use std::io::{self, Read, Write};

const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
/// Larger than any frame ironclos handles (jumbo 9216) with room to spare.
pub const SNAPLEN: u32 = 65_535;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapPacket {
    /// Capture time in nanoseconds since the epoch.
    pub timestamp_ns: u64,
    pub data: Vec<u8>,
}

#[derive(Debug)]
pub enum PcapError {
    Io(io::Error),
    BadMagic(u32),
    UnsupportedLinkType(u32),
    /// A record header promised more bytes than the file holds, or more than the snaplen.
    BadRecord {
        index: usize,
        reason: &'static str,
    },
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcapError::Io(e) => write!(f, "{e}"),
            PcapError::BadMagic(m) => write!(f, "not a pcap file (magic {m:#010x})"),
            PcapError::UnsupportedLinkType(t) => write!(f, "link type {t} is not Ethernet"),
            PcapError::BadRecord { index, reason } => write!(f, "record {index}: {reason}"),
        }
    }
}

impl std::error::Error for PcapError {}

impl From<io::Error> for PcapError {
    fn from(e: io::Error) -> Self {
        PcapError::Io(e)
    }
}

/// Reads a whole pcap file.
pub fn read_pcap(mut input: impl Read) -> Result<Vec<PcapPacket>, PcapError> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    parse_pcap(&bytes)
}

/// A file's byte order and time unit, from its global header.
#[derive(Debug, Clone, Copy)]
struct Format {
    little_endian: bool,
    nanos: bool,
}

impl Format {
    /// Checks the 24-byte global header: magic and Ethernet link type.
    fn of(bytes: &[u8]) -> Result<Format, PcapError> {
        if bytes.len() < 24 {
            return Err(PcapError::BadMagic(0));
        }
        let magic_le = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes"));
        let (little_endian, nanos) = match magic_le {
            MAGIC_MICROS => (true, false),
            MAGIC_NANOS => (true, true),
            m if m.swap_bytes() == MAGIC_MICROS => (false, false),
            m if m.swap_bytes() == MAGIC_NANOS => (false, true),
            m => return Err(PcapError::BadMagic(m)),
        };
        let format = Format {
            little_endian,
            nanos,
        };
        let linktype = format.word(bytes, 20);
        if linktype != LINKTYPE_ETHERNET {
            return Err(PcapError::UnsupportedLinkType(linktype));
        }
        Ok(format)
    }

    /// The u32 at `at`; the caller checked that four bytes are there.
    fn word(self, bytes: &[u8], at: usize) -> u32 {
        let raw: [u8; 4] = bytes[at..at + 4].try_into().expect("4 bytes");
        if self.little_endian {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        }
    }

    /// The time of the record whose 16-byte header starts at `at`, in nanoseconds.
    fn timestamp_ns(self, bytes: &[u8], at: usize) -> u64 {
        let seconds = u64::from(self.word(bytes, at));
        let fraction = u64::from(self.word(bytes, at + 4));
        seconds * 1_000_000_000
            + if self.nanos {
                fraction
            } else {
                fraction * 1_000
            }
    }
}

/// Parses pcap bytes.
pub fn parse_pcap(bytes: &[u8]) -> Result<Vec<PcapPacket>, PcapError> {
    let format = Format::of(bytes)?;
    let mut packets = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        let index = packets.len();
        if bytes.len() - at < 16 {
            return Err(PcapError::BadRecord {
                index,
                reason: "truncated record header",
            });
        }
        let timestamp_ns = format.timestamp_ns(bytes, at);
        let captured = format.word(bytes, at + 8) as usize;
        at += 16;
        if captured > SNAPLEN as usize {
            return Err(PcapError::BadRecord {
                index,
                reason: "captured length beyond snaplen",
            });
        }
        if bytes.len() - at < captured {
            return Err(PcapError::BadRecord {
                index,
                reason: "truncated record data",
            });
        }
        packets.push(PcapPacket {
            timestamp_ns,
            data: bytes[at..at + captured].to_vec(),
        });
        at += captured;
    }
    Ok(packets)
}

/// The time of a pcap file's first record in nanoseconds (`None` for a file without records),
/// reading only its first 40 bytes: a replay's time origin comes from its inputs' first frames.
pub fn first_timestamp_ns(path: &std::path::Path) -> Result<Option<u64>, PcapError> {
    let mut head = Vec::with_capacity(40);
    std::fs::File::open(path)?.take(40).read_to_end(&mut head)?;
    let format = Format::of(&head)?;
    Ok((head.len() == 40).then(|| format.timestamp_ns(&head, 24)))
}

/// Writes packets as a microsecond pcap file (timestamps are truncated to microseconds).
pub fn write_pcap<'a>(
    mut out: impl Write,
    packets: impl IntoIterator<Item = &'a PcapPacket>,
) -> io::Result<()> {
    let mut header = Vec::with_capacity(24);
    header.extend_from_slice(&MAGIC_MICROS.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&0i32.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&SNAPLEN.to_le_bytes());
    header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    out.write_all(&header)?;
    for packet in packets {
        let len = u32::try_from(packet.data.len())
            .ok()
            .filter(|&len| len <= SNAPLEN)
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "frame longer than snaplen")
            })?;
        let seconds = u32::try_from(packet.timestamp_ns / 1_000_000_000)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "timestamp beyond 2106"))?;
        let micros = ((packet.timestamp_ns % 1_000_000_000) / 1_000) as u32;
        out.write_all(&seconds.to_le_bytes())?;
        out.write_all(&micros.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&packet.data)?;
    }
    out.flush()
}

/// Reads a pcap file from disk.
pub fn read_pcap_file(path: &std::path::Path) -> Result<Vec<PcapPacket>, PcapError> {
    read_pcap(io::BufReader::new(std::fs::File::open(path)?))
}

/// Writes a pcap file to disk.
pub fn write_pcap_file(path: &std::path::Path, packets: &[PcapPacket]) -> io::Result<()> {
    write_pcap(io::BufWriter::new(std::fs::File::create(path)?), packets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_bytes_and_microsecond_time() {
        let packets = vec![
            PcapPacket {
                timestamp_ns: 1_700_000_000_123_456_789,
                data: vec![1, 2, 3],
            },
            PcapPacket {
                timestamp_ns: 1_700_000_001_000_000_000,
                data: vec![0xff; 60],
            },
        ];
        let mut file = Vec::new();
        write_pcap(&mut file, &packets).unwrap();
        assert_eq!(file.len(), 24 + 16 + 3 + 16 + 60);
        let back = parse_pcap(&file).unwrap();
        assert_eq!(back[0].data, vec![1, 2, 3]);
        assert_eq!(back[0].timestamp_ns, 1_700_000_000_123_456_000);
        assert_eq!(back[1], packets[1]);
    }

    #[test]
    fn reads_big_endian_nanosecond_files() {
        let mut file = Vec::new();
        file.extend_from_slice(&MAGIC_NANOS.to_be_bytes());
        file.extend_from_slice(&[
            0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
        ]);
        file.extend_from_slice(&7u32.to_be_bytes());
        file.extend_from_slice(&9u32.to_be_bytes());
        file.extend_from_slice(&1u32.to_be_bytes());
        file.extend_from_slice(&1u32.to_be_bytes());
        file.push(0xab);
        let back = parse_pcap(&file).unwrap();
        assert_eq!(
            back,
            vec![PcapPacket {
                timestamp_ns: 7_000_000_009,
                data: vec![0xab]
            }]
        );
    }

    #[test]
    fn truncated_and_foreign_files_are_errors_not_panics() {
        let mut file = Vec::new();
        write_pcap(
            &mut file,
            &[PcapPacket {
                timestamp_ns: 0,
                data: vec![9; 20],
            }],
        )
        .unwrap();
        for cut in 0..file.len() {
            let result = parse_pcap(&file[..cut]);
            if cut == 24 {
                assert_eq!(
                    result.unwrap(),
                    vec![],
                    "a header alone is an empty capture"
                );
            } else {
                assert!(result.is_err(), "prefix of {cut} bytes must be rejected");
            }
        }
        assert!(matches!(
            parse_pcap(&[0u8; 24]),
            Err(PcapError::BadMagic(0))
        ));
    }
}
