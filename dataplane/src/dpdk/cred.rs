//! Peer credentials of a Unix socket (SO_PEERCRED): the control socket admits only the
//! switch's own user and root. Not DPDK, but this is `dataplane`'s one home for `unsafe`
//! (`UnixStream::peer_cred` is still unstable in Rust 1.95).

use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// Who is at the other end of a Unix stream socket, as the kernel recorded at connect time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// The peer's credentials.
pub fn peer_cred(stream: &UnixStream) -> std::io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the fd is a live socket owned by `stream` for the duration of the call; `cred`
    // and `len` are valid, writable and `len` holds the size of `cred`, so the kernel writes
    // at most that many bytes into it.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// The effective uid of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_reports_our_own_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        let cred = peer_cred(&a).unwrap();
        assert_eq!(cred.uid, effective_uid());
        assert_eq!(cred.pid, std::process::id() as i32);
    }
}
