//! The run-time API server: a Unix socket served from the engine's control loop on the main
//! lcore (`EngineHooks::tick`, every ~10 ms), never blocking. Reads JSON-lines requests
//! (`api`), answers counters directly from the workers' single-writer atomics, and hands
//! table updates and snapshots to the switch worker over `dataplane::ctl::Channel`, which
//! serves them between bursts.
//!
//! Security: the socket is created mode 0600 in a directory that other users cannot write to
//! (else the switch refuses to start), and every connection's peer credentials (SO_PEERCRED)
//! must be the switch's own uid or root, else it gets one error line and is closed.

use crate::api::{self, Command};
use crate::config::{Config, format_mac};
use crate::metrics::MetricsServer;
use dataplane::counters::{CounterSnapshot, DropReason};
use dataplane::ctl::{Dump, DumpKind, Reply, Request, Update};
use dataplane::dpdk::LinkStatus;
use dataplane::dpdk::cred::{effective_uid, peer_cred};
use dataplane::engine::{ControlHandle, PortInfo};
use dataplane::pipeline::spec::{Attachment, PortRole, RouteTarget, SidBehavior, SwitchSpec};
use dataplane::qos::{EcnProfile, TC_COUNT};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::IpAddr;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Connections served at once; more are told so and closed, unless one of those open has
/// been idle for `IDLE_EVICTION` (then it makes room).
const MAX_CONNECTIONS: usize = 32;
/// How long a connection may sit without a request, with nothing in flight, before a new
/// client may take its place when every slot is taken (clients that connect and never send
/// would otherwise lock everyone out).
const IDLE_EVICTION: Duration = Duration::from_secs(10);
/// Reply bytes queued for one connection beyond which its next requests wait.
const MAX_OUTPUT: usize = 64 << 20;
/// Bytes read from one connection per tick (a big request takes several ticks).
const READ_PER_TICK: usize = 16 << 20;
/// How long a tick keeps serving while requests are with the worker (answers, then the
/// requests queued behind them), before leaving the rest to the next tick. The main lcore is
/// not a worker: this delays only link polling and other clients.
const REPLY_WAIT: Duration = Duration::from_millis(50);
/// A request the worker has not answered by then gets an error (the worker is not serving:
/// a replay, or it stopped).
const WORKER_TIMEOUT: Duration = Duration::from_secs(5);
/// ECMP member shares for metrics are refreshed this often.
const GROUPS_REFRESH: Duration = Duration::from_secs(1);

/// Names the operator uses for what the dataplane numbers.
#[derive(Debug, Clone)]
pub struct Names {
    pub switch: String,
    pub ports: Vec<String>,
    pub vrfs: Vec<String>,
    pub groups: Vec<String>,
    /// By group slot: the VRF its members' interfaces are in (`config::check_forwarding_vrf`).
    pub group_vrfs: Vec<u16>,
    /// By port: its configured `mtu` (`config::check_ipv6_mtu`).
    pub port_mtus: Vec<Option<u16>>,
    /// L3 interfaces: a routed port's name, or `vlanN`.
    pub interfaces: Vec<String>,
    pub spec: Option<SwitchSpec>,
    /// The neighbour (interface, address) of each End.X/uA SID added at run time with
    /// `via`, by SID slot: the worker makes it a nexthop whose id the server does not learn.
    pub sid_vias: HashMap<u32, (u16, IpAddr)>,
}

impl Names {
    pub fn of(config: &Config) -> Names {
        let spec = config.switch_spec();
        let ports: Vec<String> = config.ports.iter().map(|p| p.name.clone()).collect();
        let interfaces = spec.as_ref().map_or(Vec::new(), |s| {
            s.interfaces
                .iter()
                .map(|i| match i.attachment {
                    Attachment::Port(p) => ports
                        .get(usize::from(p))
                        .cloned()
                        .unwrap_or_else(|| format!("port{p}")),
                    Attachment::Vlan(v) => format!("vlan{v}"),
                })
                .collect()
        });
        // A group forwards in its members' VRF (they share one, as the config checks).
        let group_vrfs = spec.as_ref().map_or(Vec::new(), |s| {
            s.groups
                .iter()
                .map(|g| {
                    g.members
                        .first()
                        .and_then(|&(n, _)| s.nexthops.get(n as usize))
                        .and_then(|n| s.interfaces.get(usize::from(n.interface)))
                        .map_or(0, |i| i.vrf)
                })
                .collect()
        });
        Names {
            switch: config.name.clone(),
            ports,
            vrfs: config.vrf_names().to_vec(),
            groups: config.group_names().to_vec(),
            group_vrfs,
            port_mtus: config.ports.iter().map(|p| p.mtu).collect(),
            interfaces,
            spec,
            sid_vias: HashMap::new(),
        }
    }

    pub(crate) fn port(&self, name: &str) -> Result<u16, String> {
        if let Some(i) = self.ports.iter().position(|p| p == name) {
            return Ok(i as u16);
        }
        Err(format!(
            "no port `{name}` (ports: {})",
            self.ports.join(", ")
        ))
    }

    pub(crate) fn vrf(&self, name: Option<&str>) -> Result<u16, String> {
        match name {
            None => Ok(0),
            Some(n) => self
                .vrfs
                .iter()
                .position(|v| v == n)
                .map(|i| i as u16)
                .ok_or_else(|| format!("no VRF `{n}` (VRFs: {})", self.vrfs.join(", "))),
        }
    }

    pub(crate) fn vrf_name(&self, vrf: u16) -> String {
        self.vrfs
            .get(usize::from(vrf))
            .cloned()
            .unwrap_or_else(|| vrf.to_string())
    }

    pub(crate) fn dev(&self, name: &str) -> Result<u16, String> {
        self.interfaces
            .iter()
            .position(|i| i == name)
            .map(|i| i as u16)
            .ok_or_else(|| {
                format!(
                    "no L3 interface `{name}` (interfaces: {})",
                    self.interfaces.join(", ")
                )
            })
    }

    pub(crate) fn dev_name(&self, interface: u16) -> String {
        self.interfaces
            .get(usize::from(interface))
            .cloned()
            .unwrap_or_else(|| format!("if{interface}"))
    }

    pub(crate) fn group(&self, name: &str) -> Result<u32, String> {
        self.groups
            .iter()
            .position(|g| g == name && !name.is_empty())
            .map(|i| i as u32)
            .ok_or_else(|| format!("no ECMP group `{name}`"))
    }

    pub(crate) fn group_name(&self, id: u32) -> String {
        self.groups
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    pub(crate) fn policies(&self) -> Vec<String> {
        self.spec.as_ref().map_or(Vec::new(), |s| {
            s.srv6.policies.iter().map(|p| p.name.clone()).collect()
        })
    }

    pub(crate) fn policy(&self, name: &str) -> Result<u32, String> {
        self.policies()
            .iter()
            .position(|p| p == name && !name.is_empty())
            .map(|i| i as u32)
            .ok_or_else(|| format!("no SRv6 policy `{name}`"))
    }
}

/// `a.b.c.d/len` or `x::/len`; a bare address is a host route.
pub fn parse_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (text, None),
    };
    let ip: IpAddr = addr
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not an IPv4 or IPv6 prefix"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(l) => l
            .trim()
            .parse::<u8>()
            .ok()
            .filter(|l| *l <= max)
            .ok_or_else(|| format!("`{text}`: prefix length must be 0..={max}"))?,
    };
    Ok((ip, len))
}

pub(crate) fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not an IP address"))
}

/// What to do with the worker's answer.
#[derive(Debug)]
enum Then {
    Routes,
    Nexthops,
    Groups,
    Macs,
    /// The batch changed these ECN profiles and policies (kept in the server's copy once
    /// applied).
    Updated(Changes),
    TableDump(String),
    /// A P4 entry to a nexthop given by id, held until the worker's nexthops (the reply)
    /// tell its interface's VRF (`p4ctl::needs_nexthops`); then applied, or refused.
    NexthopVrf(Box<Update>),
    /// A reload: the config to keep once the worker applied the difference, and how many
    /// updates of each op it was.
    Reloaded(Box<Config>, Changes, Value),
    /// Refresh the ECMP share cache for metrics (no connection waits).
    CacheGroups,
}

struct Pending {
    conn: Option<usize>,
    id: Value,
    then: Then,
    since: Instant,
}

struct Conn {
    stream: UnixStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// A request of this connection is with the worker: later lines wait.
    waiting: bool,
    /// Close once the output is written.
    closing: bool,
    /// When the connection last sent bytes.
    last_request: Instant,
}

impl Conn {
    /// Idle since `last_request`: nothing to answer, nothing with the worker, nothing unread.
    fn idle_since(&self) -> Option<Instant> {
        (!self.waiting && !self.closing && self.input.is_empty() && self.output.is_empty())
            .then_some(self.last_request)
    }
}

/// Of connections that may make room for a new one, as (slot, idle since), the one idle the
/// longest if it has been for `at_least`: the choice both the control socket (`at_least` =
/// `IDLE_EVICTION`) and the metrics listener (any idle time) make when every slot is taken.
pub(crate) fn longest_idle(
    idle: impl IntoIterator<Item = (usize, Instant)>,
    now: Instant,
    at_least: Duration,
) -> Option<(usize, Instant)> {
    idle.into_iter()
        .filter(|&(_, since)| now.saturating_duration_since(since) >= at_least)
        .min_by_key(|&(_, since)| since)
}

/// The API socket, the metrics listener and the state both read.
pub struct ControlServer {
    listener: Option<(UnixListener, PathBuf)>,
    metrics: Option<MetricsServer>,
    conns: Vec<Option<Conn>>,
    names: Names,
    handle: Option<ControlHandle>,
    links: Vec<LinkStatus>,
    /// Each port's routing MTU (`PortInfo::routing_mtu`), once the ports are up.
    mtus: Vec<u16>,
    /// ECN profiles per (port, TC) as the worker has them (config, then applied changes).
    ecn: Vec<[Option<EcnProfile>; TC_COUNT]>,
    pending: HashMap<u64, Pending>,
    next_request: u64,
    own_uid: u32,
    /// Last ECMP group snapshot (for metrics) and when it was asked for.
    groups_cache: Option<Vec<dataplane::ctl::GroupEntry>>,
    groups_asked: Option<Instant>,
    nexthops_cache: Vec<dataplane::ctl::NexthopEntry>,
    /// The config last loaded (at start or by `reload`), and where it is read from.
    config: Box<Config>,
    config_path: PathBuf,
}

/// Checks the socket's directory and any file already at the path, then binds and sets mode
/// 0600. Refuses (with the reason) a directory other users may write to, a path held by
/// something that is not a socket, or a socket another switch is listening on.
pub fn bind_socket(path: &Path) -> Result<UnixListener, String> {
    let shown = path.display();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let meta = std::fs::metadata(&dir)
        .map_err(|e| format!("control socket {shown}: directory {}: {e}", dir.display()))?;
    let uid = effective_uid();
    if meta.uid() != uid && meta.uid() != 0 {
        return Err(format!(
            "control socket {shown}: directory {} belongs to uid {}, not to this user ({uid}) or root",
            dir.display(),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "control socket {shown}: directory {} has mode {:04o}: other users could replace the socket; make it writable by its owner only (chmod go-w) or sticky",
            dir.display(),
            mode & 0o7777
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(existing) => {
            if !existing.file_type().is_socket() {
                return Err(format!(
                    "control socket {shown}: the path exists and is not a socket; remove it or choose another path"
                ));
            }
            if existing.uid() != uid {
                return Err(format!(
                    "control socket {shown}: an existing socket belongs to uid {}, not to this user ({uid})",
                    existing.uid()
                ));
            }
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "control socket {shown}: another process is listening on it (a switch already running?)"
                ));
            }
            std::fs::remove_file(path).map_err(|e| {
                format!("control socket {shown}: cannot remove the stale socket: {e}")
            })?;
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(format!("control socket {shown}: {e}")),
    }
    let listener =
        UnixListener::bind(path).map_err(|e| format!("control socket {shown}: bind: {e}"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("control socket {shown}: chmod 0600: {e}"))?;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("control socket {shown}: {e}"))?
        .permissions()
        .mode();
    if mode & 0o777 != 0o600 {
        let _ = std::fs::remove_file(path);
        return Err(format!(
            "control socket {shown}: mode is {:04o} after chmod 0600",
            mode & 0o7777
        ));
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("control socket {shown}: {e}"))?;
    Ok(listener)
}

impl ControlServer {
    /// Opens what `[control]` asks for (before DPDK starts, so a bad socket stops the run
    /// early). `Ok(None)` when neither the socket nor metrics are configured.
    pub fn open(config: &Config) -> Result<Option<ControlServer>, String> {
        if config.control.socket.is_none() && config.control.metrics.is_none() {
            return Ok(None);
        }
        let listener = match &config.control.socket {
            Some(path) => Some((bind_socket(path)?, path.clone())),
            None => None,
        };
        let metrics = match config.control.metrics {
            Some(addr) => Some(MetricsServer::bind(addr)?),
            None => None,
        };
        let names = Names::of(config);
        let ecn = match &names.spec {
            Some(spec) => spec
                .qos
                .ports
                .iter()
                .map(|p| std::array::from_fn(|tc| p.tcs[tc].ecn))
                .collect(),
            None => vec![[None; TC_COUNT]; names.ports.len()],
        };
        Ok(Some(ControlServer {
            listener,
            metrics,
            conns: Vec::new(),
            links: vec![
                LinkStatus {
                    up: false,
                    speed_mbps: 0
                };
                names.ports.len()
            ],
            mtus: vec![0; names.ports.len()],
            names,
            handle: None,
            ecn,
            pending: HashMap::new(),
            next_request: 1,
            own_uid: effective_uid(),
            groups_cache: None,
            groups_asked: None,
            nexthops_cache: Vec::new(),
            config: Box::new(config.clone()),
            config_path: std::path::absolute(&config.path).unwrap_or_else(|_| config.path.clone()),
        }))
    }

    pub fn attach(&mut self, handle: ControlHandle) {
        self.handle = Some(handle);
    }

    pub fn ready(&mut self, ports: &[PortInfo]) {
        for (i, p) in ports.iter().enumerate() {
            if let Some(l) = self.links.get_mut(i) {
                *l = p.link;
            }
            if let Some(m) = self.mtus.get_mut(i) {
                *m = p.routing_mtu;
            }
        }
    }

    pub fn link_changed(&mut self, port: &str, status: LinkStatus) {
        if let Some(i) = self.names.ports.iter().position(|p| p == port) {
            self.links[i] = status;
        }
    }

    /// One round of serving: read (and reap), accept, answer, write. Never blocks for long.
    pub fn tick(&mut self) {
        // The open connections first: one whose client hung up is reaped (`flush`) before
        // new ones are counted against `MAX_CONNECTIONS`, so it holds no slot they need.
        self.read_all_and_reap();
        // Then new ones, read in this same tick.
        for index in self.accept() {
            self.read_and_serve(index);
        }
        let until = Instant::now() + REPLY_WAIT;
        loop {
            if self.collect_replies() > 0 {
                // Answers go out at once; requests that waited behind them (or arrived
                // since: a client that pipelines) go to the worker in this same tick.
                for index in 0..self.conns.len() {
                    self.flush(index);
                    self.read_and_serve(index);
                }
            }
            if self.pending.iter().all(|(_, p)| p.conn.is_none()) || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        self.expire_pending();
        self.refresh_groups_cache();
        for index in 0..self.conns.len() {
            self.flush(index);
        }
        if self.metrics.as_mut().is_some_and(MetricsServer::poll) {
            let text = self.metrics_text();
            if let Some(m) = &mut self.metrics {
                m.respond(Some(&text));
            }
        } else if let Some(m) = &mut self.metrics {
            m.respond(None);
        }
    }

    /// Reads (and answers) every open connection, writes what it can and drops those whose
    /// client hung up with nothing left to send or wait for.
    fn read_all_and_reap(&mut self) {
        for index in 0..self.conns.len() {
            self.read_and_serve(index);
            self.flush(index);
        }
    }

    /// Open connections.
    fn live(&self) -> usize {
        self.conns.iter().filter(|c| c.is_some()).count()
    }

    /// Accepts what waits on the listener; the slots of the connections it accepted.
    fn accept(&mut self) -> Vec<usize> {
        let (mut accepted, mut reaped) = (Vec::new(), false);
        loop {
            let stream = match self.listener.as_ref().map(|(l, _)| l.accept()) {
                Some(Ok((s, _))) => s,
                _ => return accepted,
            };
            let refuse = |mut s: UnixStream, why: String| {
                let _ = s.set_nonblocking(true);
                let _ = s.write_all((api::error_line(&Value::Null, &why) + "\n").as_bytes());
            };
            match peer_cred(&stream) {
                Ok(c) if c.uid == self.own_uid || c.uid == 0 => {}
                Ok(c) => {
                    refuse(
                        stream,
                        format!(
                            "permission denied: uid {} is neither the switch's user (uid {}) nor root",
                            c.uid, self.own_uid
                        ),
                    );
                    continue;
                }
                Err(e) => {
                    refuse(
                        stream,
                        format!("permission denied: no peer credentials ({e})"),
                    );
                    continue;
                }
            }
            if self.live() >= MAX_CONNECTIONS && !reaped {
                // Full: a client may have hung up since this tick read the connections.
                self.read_all_and_reap();
                reaped = true;
            }
            if self.live() >= MAX_CONNECTIONS && !self.evict_idle() {
                refuse(
                    stream,
                    format!(
                        "busy: {MAX_CONNECTIONS} connections are open already, none idle for {} s",
                        IDLE_EVICTION.as_secs()
                    ),
                );
                continue;
            }
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let conn = Conn {
                stream,
                input: Vec::new(),
                output: Vec::new(),
                waiting: false,
                closing: false,
                last_request: Instant::now(),
            };
            let slot = match self.conns.iter().position(Option::is_none) {
                Some(free) => {
                    self.conns[free] = Some(conn);
                    free
                }
                None => {
                    self.conns.push(Some(conn));
                    self.conns.len() - 1
                }
            };
            accepted.push(slot);
        }
    }

    /// Closes the connection idle the longest, if one has been for `IDLE_EVICTION`, telling
    /// it why; whether one was.
    fn evict_idle(&mut self) -> bool {
        let now = Instant::now();
        let idle = self
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.as_ref()?.idle_since()?)));
        let Some((index, since)) = longest_idle(idle, now, IDLE_EVICTION) else {
            return false;
        };
        let why = format!(
            "closing: idle for {} s while every connection slot is taken",
            now.duration_since(since).as_secs()
        );
        if let Some(mut conn) = self.conns[index].take() {
            let _ = conn
                .stream
                .write_all((api::error_line(&Value::Null, &why) + "\n").as_bytes());
        }
        true
    }

    fn read_and_serve(&mut self, index: usize) {
        let Some(conn) = self.conns[index].as_mut() else {
            return;
        };
        // Read while there is room: what is buffered is at most one request's worth beyond
        // the limit, and nothing while replies wait for the client to read them.
        if !conn.closing
            && conn.input.len() <= api::MAX_REQUEST_BYTES
            && conn.output.len() <= MAX_OUTPUT
        {
            let mut buf = [0u8; 65536];
            let mut read = 0;
            while read < READ_PER_TICK && conn.input.len() <= api::MAX_REQUEST_BYTES {
                match conn.stream.read(&mut buf) {
                    Ok(0) => {
                        conn.closing = true;
                        break;
                    }
                    Ok(n) => {
                        read += n;
                        conn.input.extend_from_slice(&buf[..n]);
                        conn.last_request = Instant::now();
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        conn.closing = true;
                        break;
                    }
                }
            }
        }
        self.serve_lines(index);
    }

    /// Answers complete lines until one has to wait for the worker.
    fn serve_lines(&mut self, index: usize) {
        loop {
            let Some(conn) = self.conns[index].as_mut() else {
                return;
            };
            // Backpressure: a client that does not read its replies gets no more answers
            // (and its requests stay unread) until it does.
            if conn.waiting || conn.output.len() > MAX_OUTPUT {
                return;
            }
            let Some(newline) = conn.input.iter().position(|&b| b == b'\n') else {
                if conn.input.len() > api::MAX_REQUEST_BYTES {
                    let line = api::error_line(
                        &Value::Null,
                        &format!(
                            "request longer than {} bytes; closing the connection",
                            api::MAX_REQUEST_BYTES
                        ),
                    );
                    conn.output.extend_from_slice(line.as_bytes());
                    conn.output.push(b'\n');
                    conn.input.clear();
                    conn.closing = true;
                } else if conn.closing && !conn.input.is_empty() {
                    // The peer shut down after a last line without newline: answer it.
                    let line: Vec<u8> = std::mem::take(&mut conn.input);
                    self.serve_line(index, &line);
                    continue;
                }
                return;
            };
            let mut line: Vec<u8> = conn.input.drain(..=newline).collect();
            line.pop();
            if line.len() > api::MAX_REQUEST_BYTES {
                let reply = api::error_line(
                    &Value::Null,
                    &format!("request longer than {} bytes", api::MAX_REQUEST_BYTES),
                );
                self.send(index, reply);
                continue;
            }
            if api::is_blank(&line) {
                continue;
            }
            self.serve_line(index, &line);
        }
    }

    fn send(&mut self, index: usize, line: String) {
        if let Some(conn) = self.conns[index].as_mut() {
            conn.output.extend_from_slice(line.as_bytes());
            conn.output.push(b'\n');
        }
    }

    fn serve_line(&mut self, index: usize, line: &[u8]) {
        let reply = match api::parse_request(line) {
            Err((id, error)) => api::error_line(&id, &error),
            Ok((id, command)) => match self.execute(index, &id, command) {
                Ok(Some(result)) => api::ok_line(&id, result),
                Ok(None) => return, // with the worker
                Err(error) => api::error_line(&id, &error),
            },
        };
        self.send(index, reply);
    }

    /// Runs a command: `Ok(Some(result))` answered now, `Ok(None)` sent to the worker.
    fn execute(
        &mut self,
        conn: usize,
        id: &Value,
        command: Command,
    ) -> Result<Option<Value>, String> {
        match command {
            Command::Hello => Ok(Some(json!({
                "switch": self.names.switch,
                "version": env!("CARGO_PKG_VERSION"),
                "protocol": api::VERSION,
                "mode": if self.names.spec.is_some() { "switch" } else { "io" },
                "ports": self.names.ports,
            }))),
            Command::ShowPorts => Ok(Some(self.ports_json())),
            Command::ShowQueues { port } => {
                let only = port.as_deref().map(|p| self.names.port(p)).transpose()?;
                Ok(Some(self.queues_json(only)))
            }
            Command::ShowDrops => Ok(Some(self.drops_json())),
            Command::ShowSrv6 => Ok(Some(self.srv6_json())),
            Command::ShowVlans => Ok(Some(self.vlans_json())),
            Command::SetPort { port, up } => {
                let index = self.names.port(&port)?;
                let handle = self.handle()?;
                handle.admin.set(usize::from(index), up);
                Ok(Some(
                    json!({"port": port, "admin": if up { "up" } else { "down" }}),
                ))
            }
            Command::ShowRoutes { vrf, limit } => {
                let vrf = vrf
                    .as_deref()
                    .map(|v| self.names.vrf(Some(v)))
                    .transpose()?;
                self.submit_to_worker(
                    conn,
                    id,
                    Request::Dump(vec![DumpKind::Nexthops, DumpKind::Routes { vrf, limit }]),
                    Then::Routes,
                )
            }
            Command::ShowNexthops => self.submit_to_worker(
                conn,
                id,
                Request::Dump(vec![DumpKind::Nexthops]),
                Then::Nexthops,
            ),
            Command::ShowGroups => self.submit_to_worker(
                conn,
                id,
                Request::Dump(vec![DumpKind::Nexthops, DumpKind::Groups]),
                Then::Groups,
            ),
            Command::ShowMacs { limit } => self.submit_to_worker(
                conn,
                id,
                Request::Dump(vec![DumpKind::Macs { limit }]),
                Then::Macs,
            ),
            Command::Update(ops) => {
                // Later updates see the names earlier ones create or delete (a policy added,
                // then a route to it), in a copy of the names taken at the first such update.
                let mut updates = Vec::with_capacity(ops.len());
                let mut scratch: Option<Names> = None;
                let mut notes = Vec::new();
                for (i, op) in ops.iter().enumerate() {
                    let names = scratch.as_ref().unwrap_or(&self.names);
                    let (update, group_name) = crate::resolve::resolve(names, op)
                        .map_err(|e| format!("updates[{i}]: {e}; nothing was applied"))?;
                    if crate::resolve::renames(&update) {
                        scratch
                            .get_or_insert_with(|| self.names.clone())
                            .note(&update, group_name.as_deref());
                        notes.push((update.clone(), group_name));
                    }
                    updates.push(update);
                }
                let mut changes = batch_changes(&updates);
                changes.notes = notes;
                self.submit_to_worker(conn, id, Request::Apply(updates), Then::Updated(changes))
            }
            Command::TableAdd {
                table,
                action,
                matches,
                params,
            } => {
                let update =
                    crate::p4ctl::table_add(&self.names, &table, &action, &matches, &params)?;
                if let Update::AddSid { spec, .. } = &update {
                    // As `add_sid` and the config: clear of connected subnets.
                    crate::resolve::sid_clear_of_subnets(
                        &self.names,
                        spec.vrf,
                        spec.prefix,
                        spec.len,
                    )?;
                }
                if crate::p4ctl::needs_nexthops(&update).is_some() {
                    return self.submit_to_worker(
                        conn,
                        id,
                        Request::Dump(vec![DumpKind::Nexthops]),
                        Then::NexthopVrf(Box::new(update)),
                    );
                }
                self.apply(conn, id, vec![update])
            }
            Command::TableDelete { table, matches } => {
                let update = crate::p4ctl::table_delete(&self.names, &table, &matches)?;
                self.apply(conn, id, vec![update])
            }
            Command::Reload => {
                let new = Config::load(&self.config_path)
                    .map_err(|e| format!("reload: {e}; nothing was applied"))?;
                let (updates, group_names) = crate::reload::diff(&self.config, &new, &self.names)?;
                if updates.is_empty() {
                    *self.config = new;
                    return Ok(Some(
                        json!({"applied": 0, "config": self.config_path, "updates": {}}),
                    ));
                }
                let mut ecn = batch_changes(&updates);
                for (update, name) in &mut ecn.notes {
                    if let Update::AddGroup { slot, .. } = update {
                        *name = group_names.get(slot).cloned();
                    }
                }
                let mut summary: std::collections::BTreeMap<&str, usize> = Default::default();
                for update in &updates {
                    *summary.entry(crate::resolve::op_name(update)).or_default() += 1;
                }
                self.submit_to_worker(
                    conn,
                    id,
                    Request::Apply(updates),
                    Then::Reloaded(Box::new(new), ecn, json!(summary)),
                )
            }
            Command::TableDump { table } => {
                let kinds = crate::p4ctl::dump_kinds(&table)?;
                self.submit_to_worker(conn, id, Request::Dump(kinds), Then::TableDump(table))
            }
        }
    }

    fn handle(&self) -> Result<&ControlHandle, String> {
        self.handle
            .as_ref()
            .ok_or_else(|| "the switch is not running yet".to_owned())
    }

    fn apply(
        &mut self,
        conn: usize,
        id: &Value,
        updates: Vec<Update>,
    ) -> Result<Option<Value>, String> {
        let ecn = batch_changes(&updates);
        self.submit_to_worker(conn, id, Request::Apply(updates), Then::Updated(ecn))
    }

    fn submit_to_worker(
        &mut self,
        conn: usize,
        id: &Value,
        request: Request,
        then: Then,
    ) -> Result<Option<Value>, String> {
        let handle = self.handle()?;
        if !handle.switch_mode {
            return Err("io mode has no tables (mode = \"switch\" has)".to_owned());
        }
        let key = self.next_request;
        if handle.channel.submit(key, request).is_err() {
            return Err("busy: too many requests are waiting for the worker; retry".to_owned());
        }
        self.next_request += 1;
        self.pending.insert(
            key,
            Pending {
                conn: Some(conn),
                id: id.clone(),
                then,
                since: Instant::now(),
            },
        );
        if let Some(c) = self.conns[conn].as_mut() {
            c.waiting = true;
        }
        Ok(None)
    }

    /// Delivers the worker's answers; how many there were.
    fn collect_replies(&mut self) -> usize {
        let Some(handle) = &self.handle else {
            return 0;
        };
        let mut replies = Vec::new();
        while let Some(r) = handle.channel.reply() {
            replies.push(r);
        }
        let count = replies.len();
        for (key, reply) in replies {
            let Some(pending) = self.pending.remove(&key) else {
                continue; // timed out already
            };
            let Some((pending, reply)) = self.apply_checked(pending, reply) else {
                continue; // with the worker again
            };
            let line = match self.finish(pending.then, reply) {
                Ok(result) => api::ok_line(&pending.id, result),
                Err(error) => api::error_line(&pending.id, &error),
            };
            if let Some(conn) = pending.conn {
                self.send(conn, line);
                if let Some(c) = self.conns[conn].as_mut() {
                    c.waiting = false;
                }
            }
        }
        count
    }

    fn expire_pending(&mut self) {
        let late: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.since.elapsed() > WORKER_TIMEOUT)
            .map(|(k, _)| *k)
            .collect();
        for key in late {
            let pending = self.pending.remove(&key).expect("listed");
            if let Some(conn) = pending.conn {
                self.send(
                    conn,
                    api::error_line(
                        &pending.id,
                        "the worker did not answer within 5 s (it serves requests in live mode only); \
                         an update may still take effect: check with a show",
                    ),
                );
                if let Some(c) = self.conns[conn].as_mut() {
                    c.waiting = false;
                }
            }
        }
    }

    fn refresh_groups_cache(&mut self) {
        if self.metrics.is_none() || self.names.spec.is_none() {
            return;
        }
        if self
            .groups_asked
            .is_some_and(|t| t.elapsed() < GROUPS_REFRESH)
        {
            return;
        }
        let Some(handle) = &self.handle else {
            return;
        };
        let key = self.next_request;
        if handle
            .channel
            .submit(
                key,
                Request::Dump(vec![DumpKind::Nexthops, DumpKind::Groups]),
            )
            .is_ok()
        {
            self.next_request += 1;
            self.groups_asked = Some(Instant::now());
            self.pending.insert(
                key,
                Pending {
                    conn: None,
                    id: Value::Null,
                    then: Then::CacheGroups,
                    since: Instant::now(),
                },
            );
        }
    }

    fn flush(&mut self, index: usize) {
        let Some(conn) = self.conns[index].as_mut() else {
            return;
        };
        while !conn.output.is_empty() {
            match conn.stream.write(&conn.output) {
                Ok(0) => break,
                Ok(n) => {
                    conn.output.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    conn.output.clear();
                    conn.closing = true;
                    conn.input.clear();
                    conn.waiting = false;
                    break;
                }
            }
        }
        if conn.closing && conn.output.is_empty() && !conn.waiting {
            self.conns[index] = None;
            for p in self.pending.values_mut() {
                if p.conn == Some(index) {
                    p.conn = None;
                }
            }
        }
    }

    /// A P4 entry held for the worker's nexthops (`Then::NexthopVrf`): checked with them
    /// (the VRF rule), then sent to the worker to apply (`None`: the connection waits on), or
    /// answered with the refusal. Any other answer is passed on as it is.
    fn apply_checked(&mut self, pending: Pending, reply: Reply) -> Option<(Pending, Reply)> {
        let Pending {
            conn,
            id,
            then,
            since,
        } = pending;
        let update = match then {
            Then::NexthopVrf(update) => update,
            then => {
                let pending = Pending {
                    conn,
                    id,
                    then,
                    since,
                };
                return Some((pending, reply));
            }
        };
        let nexthops = match &reply {
            Reply::Dump(dumps) => dumps.iter().find_map(|d| match d {
                Dump::Nexthops(list) => Some(list.as_slice()),
                _ => None,
            }),
            _ => None,
        };
        let checked = match (nexthops, crate::p4ctl::needs_nexthops(&update)) {
            (Some(nexthops), Some((what, vrf, target))) => self
                .names
                .check_target_vrf(what, vrf, target, nexthops)
                .and_then(|()| conn.ok_or_else(String::new)),
            _ => Err(match &reply {
                Reply::Unsupported(m) => m.clone(),
                other => format!("the worker's nexthops could not be read: {other:?}"),
            }),
        };
        let error = match checked {
            Ok(conn) => match self.apply(conn, &id, vec![*update]) {
                Ok(_) => return None,
                Err(e) => e,
            },
            Err(e) => e,
        };
        let pending = Pending {
            conn,
            id,
            then: Then::Nexthops,
            since,
        };
        Some((pending, Reply::Unsupported(error)))
    }

    /// Turns the worker's answer into the reply's result.
    fn finish(&mut self, then: Then, reply: Reply) -> Result<Value, String> {
        let dumps = match reply {
            Reply::Unsupported(m) => return Err(m),
            Reply::Rejected { index, error } => {
                // The worker numbers ports, VRFs, interfaces, groups: name them.
                return Err(format!(
                    "updates[{index}]: {}; nothing was applied",
                    self.names.name_ids(&error, true)
                ));
            }
            Reply::Applied { count, replaced } => {
                let mut reply = json!({"applied": count});
                // Adds that took the place of an entry (route or MAC), by index in the batch.
                if !replaced.is_empty() {
                    reply["replaced"] = json!(replaced);
                }
                let changes = match then {
                    Then::Updated(changes) => changes,
                    Then::Reloaded(config, changes, summary) => {
                        self.config = config;
                        reply["config"] = json!(self.config_path);
                        reply["updates"] = summary;
                        changes
                    }
                    _ => Changes::default(),
                };
                for (port, tc, profile) in changes.ecn {
                    self.ecn[usize::from(port)][usize::from(tc)] = profile;
                }
                for (update, group_name) in &changes.notes {
                    self.names.note(update, group_name.as_deref());
                }
                return Ok(reply);
            }
            Reply::Dump(dumps) => dumps,
        };
        let mut nexthops = Vec::new();
        let mut result = Value::Null;
        for dump in dumps {
            match dump {
                Dump::Nexthops(list) => {
                    nexthops = list;
                    if matches!(then, Then::Nexthops) {
                        result =
                            Value::Array(nexthops.iter().map(|n| self.nexthop_json(n)).collect());
                    } else if let Then::TableDump(table) = &then {
                        result = crate::p4ctl::dump_nexthops(&self.names, table, &nexthops);
                    }
                }
                Dump::Routes { total, routes } => {
                    if let Then::TableDump(table) = &then {
                        result = crate::p4ctl::dump_routes(&self.names, table, &routes);
                    } else {
                        let list: Vec<Value> = routes
                            .iter()
                            .map(|r| self.route_json(r, &nexthops))
                            .collect();
                        result = json!({"total": total, "shown": list.len(), "routes": list});
                    }
                }
                Dump::Groups(groups) => {
                    if matches!(then, Then::CacheGroups) {
                        self.nexthops_cache = nexthops.clone();
                        self.groups_cache = Some(groups);
                        return Ok(Value::Null);
                    }
                    // A member's load: what its port sent (members behind a routed port).
                    let snapshot = self.snapshot();
                    let port_tx = |dev: &str| {
                        let port = self.names.ports.iter().position(|p| p == dev)?;
                        snapshot.as_ref().map(|s| s.ports[port].tx_packets)
                    };
                    result = Value::Array(
                        groups
                            .iter()
                            .map(|g| {
                                json!({
                                    "id": g.id,
                                    "name": self.names.group_name(g.id),
                                    "mode": g.mode,
                                    "choice": g.choice,
                                    "flowlet_timeout_us": g.flowlet_timeout_ps / 1_000_000,
                                    "flowlet_table_size": g.flowlet_table_size,
                                    "avoid_ecn": g.avoid_ecn,
                                    "flowlets": g.flowlets,
                                    "moves": g.moves,
                                    "forced_moves": g.forced_moves,
                                    // Max member bytes / mean: what flowlets are tuned by.
                                    "imbalance": dataplane::tables::flowlet::imbalance(
                                        &g.members.iter().map(|m| m.bytes).collect::<Vec<_>>(),
                                    ),
                                    "buckets": g.buckets,
                                    "members": g.members.iter().map(|m| {
                                        let nh = nexthops.get(m.nexthop as usize);
                                        json!({
                                            "nexthop": m.nexthop,
                                            "via": nh.map(|n| n.ip.to_string()),
                                            "dev": nh.map(|n| self.names.dev_name(n.interface)),
                                            "weight": m.weight,
                                            "up": m.up,
                                            "buckets": m.buckets,
                                            "share": m.buckets as f64 / g.buckets.max(1) as f64,
                                            "port_tx_packets": nh.and_then(|n| port_tx(&self.names.dev_name(n.interface))),
                                            "packets": m.packets,
                                            "bytes": m.bytes,
                                        })
                                    }).collect::<Vec<_>>(),
                                })
                            })
                            .collect(),
                    );
                }
                Dump::Macs { total, macs } => {
                    if let Then::TableDump(table) = &then {
                        result = crate::p4ctl::dump_macs(&self.names, table, &macs);
                    } else {
                        let list: Vec<Value> = macs
                            .iter()
                            .map(|m| {
                                json!({
                                    "vlan": m.vlan,
                                    "mac": format_mac(m.mac),
                                    "port": self.names.ports.get(usize::from(m.port)),
                                    "static": m.is_static,
                                })
                            })
                            .collect();
                        result = json!({"total": total, "shown": list.len(), "macs": list});
                    }
                }
                Dump::Sids(sids) => {
                    if let Then::TableDump(table) = &then {
                        result = crate::p4ctl::dump_sids(&self.names, table, &sids);
                    }
                }
                Dump::Ports(_) => {}
            }
        }
        Ok(result)
    }

    fn nexthop_json(&self, n: &dataplane::ctl::NexthopEntry) -> Value {
        json!({
            "id": n.id,
            "ip": n.ip.to_string(),
            "dev": self.names.dev_name(n.interface),
            "mac": n.mac.map(format_mac),
            "resolved": n.mac.is_some(),
            "state": n.state,
        })
    }

    fn route_json(
        &self,
        r: &dataplane::ctl::RouteEntry,
        nexthops: &[dataplane::ctl::NexthopEntry],
    ) -> Value {
        let mut o = Map::new();
        o.insert("vrf".into(), json!(self.names.vrf_name(r.vrf)));
        o.insert("prefix".into(), json!(format!("{}/{}", r.prefix, r.len)));
        match r.target {
            RouteTarget::Nexthop(i) => {
                o.insert("kind".into(), json!("nexthop"));
                o.insert("nexthop".into(), json!(i));
                if let Some(n) = nexthops.get(i as usize) {
                    o.insert("via".into(), json!(n.ip.to_string()));
                    o.insert("dev".into(), json!(self.names.dev_name(n.interface)));
                }
            }
            RouteTarget::Group(g) => {
                o.insert("kind".into(), json!("group"));
                o.insert("group".into(), json!(self.names.group_name(g)));
            }
            RouteTarget::Connected(i) => {
                o.insert("kind".into(), json!("connected"));
                o.insert("dev".into(), json!(self.names.dev_name(i)));
            }
            RouteTarget::Local => {
                o.insert("kind".into(), json!("local"));
            }
            RouteTarget::Blackhole => {
                o.insert("kind".into(), json!("blackhole"));
            }
            RouteTarget::Srv6Policy(p) => {
                o.insert("kind".into(), json!("srv6_policy"));
                o.insert(
                    "policy".into(),
                    json!(
                        self.names
                            .policies()
                            .get(p as usize)
                            .cloned()
                            .unwrap_or_default()
                    ),
                );
            }
        }
        Value::Object(o)
    }

    fn snapshot(&self) -> Option<CounterSnapshot> {
        self.handle
            .as_ref()
            .map(|h| CounterSnapshot::sum(&h.counters))
    }

    pub(crate) fn ports_json(&self) -> Value {
        let snap = self.snapshot();
        let admin = self.handle.as_ref().map(|h| &h.admin);
        Value::Array(
            self.names
                .ports
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let link = self.links[i];
                    let admin_up = admin.is_none_or(|a| a.is_up(i));
                    let (rx, tx) = snap
                        .as_ref()
                        .map_or((0, 0), |s| (s.ports[i].rx_packets, s.ports[i].tx_packets));
                    let device = self
                        .handle
                        .as_ref()
                        .map(|h| h.devices.port(i))
                        .unwrap_or_default();
                    // The rate the traffic manager sends at (the config's speed_gbps), which a
                    // virtual device's own link speed need not match.
                    let line_rate_mbps =
                        self.names
                            .spec
                            .as_ref()
                            .and_then(|s| match s.qos.ports.get(i)?.speed {
                                dataplane::qos::PortSpeed::Gbps(g) => Some(u64::from(g) * 1000),
                                dataplane::qos::PortSpeed::Unlimited => None,
                            });
                    json!({
                        "name": name,
                        "index": i,
                        "link": if link.up { "up" } else { "down" },
                        "speed_mbps": link.speed_mbps,
                        "line_rate_mbps": line_rate_mbps,
                        "mtu": self.mtus[i],
                        "admin": if admin_up { "up" } else { "down" },
                        "forwarding": link.up && admin_up,
                        "rx_packets": rx,
                        "tx_packets": tx,
                        // The PMD's counters, read every 100 ms: bytes, and what the
                        // device dropped or failed before the switch saw it.
                        "rx_bytes": device.rx_bytes,
                        "tx_bytes": device.tx_bytes,
                        "rx_missed": device.rx_missed,
                        "rx_nombuf": device.rx_nombuf,
                        "rx_errors": device.rx_errors,
                        "tx_errors": device.tx_errors,
                    })
                })
                .collect(),
        )
    }

    pub(crate) fn queues_json(&self, only: Option<u16>) -> Value {
        let Some(queues) = self.handle.as_ref().and_then(|h| h.queues.as_ref()) else {
            return json!([]);
        };
        let mut list = Vec::new();
        let pfc = self
            .names
            .spec
            .as_ref()
            .map_or(&[][..], |s| &s.qos.ports[..]);
        for (p, tcs) in queues.queues.iter().enumerate() {
            if only.is_some_and(|o| usize::from(o) != p) {
                continue;
            }
            for (tc, q) in tcs.iter().enumerate() {
                let ecn = self.ecn[p][tc];
                list.push(json!({
                    "port": self.names.ports[p],
                    "tc": tc,
                    "depth_bytes": q.depth_bytes.get(),
                    "peak_depth_bytes": q.peak_depth_bytes.get(),
                    "enqueued_packets": q.enqueued_packets(),
                    "enqueued_bytes": q.enqueued_bytes(),
                    "dequeued_packets": q.dequeued_packets(),
                    "dequeued_bytes": q.dequeued_bytes(),
                    "dropped_packets": q.dropped_packets.get(),
                    "ecn_marked": q.ecn_marked.get(),
                    "ingress_bytes": q.ingress_bytes.get(),
                    "pfc_tx_frames": q.pfc_tx_frames.get(),
                    "pfc_rx_frames": q.pfc_rx_frames.get(),
                    "xoff_transitions": q.xoff_transitions.get(),
                    "xon_transitions": q.xon_transitions.get(),
                    "paused_ps": q.paused_ps.get(),
                    "watchdog_storms": q.watchdog_storms.get(),
                    "headroom_drops": q.headroom_drops.get(),
                    "ecn": ecn.map(|e| json!({"kmin": e.kmin, "kmax": e.kmax, "pmax": e.pmax})),
                    "pfc": pfc.get(p).and_then(|t| t.pfc[tc]).map(|t| json!({"xoff": t.xoff, "xon": t.xon, "headroom": t.headroom})),
                }));
            }
        }
        Value::Array(list)
    }

    pub(crate) fn drops_json(&self) -> Value {
        let snap = self.snapshot();
        let mut reasons = Map::new();
        let mut total = 0;
        for reason in DropReason::ALL {
            let n = snap.as_ref().map_or(0, |s| {
                s.drops
                    .iter()
                    .find(|(r, _)| *r == reason)
                    .map_or(0, |(_, n)| *n)
            });
            total += n;
            reasons.insert(reason.as_str().to_owned(), json!(n));
        }
        let icmp = snap.as_ref().map(|s| s.icmp_errors).unwrap_or_default();
        let fragmentation = snap.as_ref().map(|s| s.fragmentation).unwrap_or_default();
        let neighbors = snap.as_ref().map(|s| s.neighbors).unwrap_or_default();
        let mac_table = snap.as_ref().map(|s| s.mac_table).unwrap_or_default();
        json!({
            "total": total,
            "reasons": reasons,
            "mac_table_full": mac_table.table_full,
            "routed_flooded": mac_table.routed_flooded,
            "icmp_errors": {
                "built": icmp.built,
                "suppressed": icmp.suppressed,
                "not_sent": icmp.not_sent,
            },
            "fragmentation": {
                "packets": fragmentation.packets,
                "fragments": fragmentation.fragments,
            },
            "neighbors": {
                "probes": neighbors.probes,
                "expired": neighbors.expired,
            },
        })
    }

    pub(crate) fn srv6_json(&self) -> Value {
        let Some(spec) = &self.names.spec else {
            return json!({"sids": [], "policies": []});
        };
        let counters = self.handle.as_ref().and_then(|h| h.srv6.as_ref());
        let object = |c: Option<&dataplane::counters::ObjectCounters>| {
            let s = c.map(|c| c.snapshot()).unwrap_or_default();
            let drops: Map<String, Value> = s
                .drops
                .iter()
                .map(|(r, n)| (r.as_str().to_owned(), json!(n)))
                .collect();
            (s.packets, s.bytes, drops)
        };
        // A deleted SID or policy leaves an empty name in its slot.
        let sids: Vec<Value> = spec
            .srv6
            .sids
            .iter()
            .enumerate()
            .filter(|(_, sid)| !sid.name.is_empty())
            .map(|(i, sid)| {
                let (packets, bytes, drops) = object(counters.and_then(|c| c.sids.get(i)));
                let behavior = match (sid.behavior, sid.next_csid.is_some()) {
                    (SidBehavior::End, false) => "End".to_owned(),
                    (SidBehavior::End, true) => "uN".to_owned(),
                    (SidBehavior::EndX { .. }, false) => "End.X".to_owned(),
                    (SidBehavior::EndX { .. }, true) => "uA".to_owned(),
                    (SidBehavior::EndDt4 { .. }, _) => "End.DT4".to_owned(),
                    (SidBehavior::EndDt6 { .. }, _) => "End.DT6".to_owned(),
                    (SidBehavior::EndDt46 { .. }, _) => "End.DT46".to_owned(),
                };
                // Where an End.X / uA sends (a group, or a neighbour and its interface), or
                // where an End.DT* looks the inner packet up.
                let adjacency = match sid.behavior {
                    SidBehavior::EndDt4 { vrf }
                    | SidBehavior::EndDt6 { vrf }
                    | SidBehavior::EndDt46 { vrf } => {
                        Some(format!("vrf {}", self.names.vrf_name(vrf)))
                    }
                    SidBehavior::EndX {
                        target: RouteTarget::Group(g),
                    } => Some(format!("group {}", self.names.group_name(g))),
                    SidBehavior::EndX {
                        target: RouteTarget::Nexthop(id),
                    } => {
                        let neighbour = self
                            .names
                            .sid_vias
                            .get(&(i as u32))
                            .copied()
                            .or_else(|| spec.nexthops.get(id as usize).map(|n| (n.interface, n.ip)))
                            .or_else(|| {
                                self.nexthops_cache
                                    .get(id as usize)
                                    .map(|n| (n.interface, n.ip))
                            });
                        Some(neighbour.map_or_else(
                            || format!("nexthop {id}"),
                            |(interface, ip)| {
                                format!("{ip} dev {}", self.names.dev_name(interface))
                            },
                        ))
                    }
                    _ => None,
                };
                json!({
                    "name": sid.name,
                    "prefix": format!("{}/{}", sid.prefix, sid.len),
                    "vrf": self.names.vrf_name(sid.vrf),
                    "behavior": behavior,
                    "adjacency": adjacency,
                    "packets": packets,
                    "bytes": bytes,
                    "drops": drops,
                })
            })
            .collect();
        let policies: Vec<Value> = spec
            .srv6
            .policies
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.name.is_empty())
            .map(|(i, p)| {
                let (packets, bytes, drops) = object(counters.and_then(|c| c.policies.get(i)));
                json!({
                    "name": p.name,
                    "mode": match p.mode {
                        dataplane::pipeline::spec::EncapMode::Encaps => "encaps",
                        dataplane::pipeline::spec::EncapMode::EncapsRed => "encaps.red",
                    },
                    "segments": p.segments.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                    "source": p.source.to_string(),
                    "packets": packets,
                    "bytes": bytes,
                    "drops": drops,
                })
            })
            .collect();
        json!({"sids": sids, "policies": policies})
    }

    /// VLANs as the worker has them (config, then applied changes) and their ports.
    pub(crate) fn vlans_json(&self) -> Value {
        let Some(spec) = &self.names.spec else {
            return json!([]);
        };
        let vlans: Vec<Value> = spec
            .vlans
            .iter()
            .map(|v| {
                let ports: Vec<Value> = spec
                    .ports
                    .iter()
                    .enumerate()
                    .filter_map(|(i, role)| {
                        let tagged = match role {
                            PortRole::Access { vlan } if *vlan == v.id => false,
                            PortRole::Trunk { native, .. } if *native == Some(v.id) => false,
                            PortRole::Trunk { allowed, .. } if allowed.contains(&v.id) => true,
                            _ => return None,
                        };
                        Some(json!({"port": self.names.ports[i], "tagged": tagged}))
                    })
                    .collect();
                json!({
                    "vlan": v.id,
                    "interface": v.interface.map(|i| self.names.dev_name(i)),
                    "ports": ports,
                })
            })
            .collect();
        Value::Array(vlans)
    }

    fn metrics_text(&self) -> String {
        crate::metrics::render(&crate::metrics::MetricsInput {
            ports: self.ports_json(),
            queues: self.queues_json(None),
            drops: self.drops_json(),
            srv6: self.srv6_json(),
            groups: self.groups_cache.as_ref().map(|groups| {
                groups
                    .iter()
                    .map(|g| crate::metrics::GroupMetrics {
                        name: self.names.group_name(g.id),
                        flowlets: g.flowlets,
                        moves: g.moves,
                        forced_moves: g.forced_moves,
                        members: g
                            .members
                            .iter()
                            .map(|m| {
                                let nh = self.nexthops_cache.get(m.nexthop as usize);
                                crate::metrics::MemberMetrics {
                                    address: nh.map_or(m.nexthop.to_string(), |n| n.ip.to_string()),
                                    share: m.buckets as f64 / g.buckets.max(1) as f64,
                                    up: m.up,
                                    packets: m.packets,
                                    bytes: m.bytes,
                                }
                            })
                            .collect(),
                    })
                    .collect()
            }),
        })
    }
}

/// What a batch changes that the server keeps a copy of (for `show queues`, `show srv6` and
/// names): ECN profiles, and the updates that change names, SIDs, policies, groups or PFC
/// thresholds (with a new group's name).
#[derive(Debug, Default)]
struct Changes {
    ecn: Vec<(u16, u8, Option<EcnProfile>)>,
    notes: Vec<(Update, Option<String>)>,
}

fn batch_changes(updates: &[Update]) -> Changes {
    let mut changes = Changes::default();
    for u in updates {
        if let Update::SetEcn { port, tc, ecn } = u {
            changes.ecn.push((*port, *tc, *ecn));
        }
        if crate::resolve::renames(u) {
            changes.notes.push((u.clone(), None));
        }
    }
    changes
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        if let Some((_, path)) = &self.listener {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ironclos-bind-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn a_socket_is_0600_a_stale_one_is_replaced_a_live_one_refused() {
        let d = dir("stale");
        let path = d.join("s.sock");
        let first = bind_socket(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = bind_socket(&path).unwrap_err();
        assert!(err.contains("another process is listening"), "{err}");
        drop(first); // the file stays behind, with nobody listening: stale
        assert!(path.exists());
        bind_socket(&path).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_open_directory_is_refused_a_sticky_one_accepted() {
        let d = dir("open");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = bind_socket(&d.join("s.sock")).unwrap_err();
        assert!(err.contains("has mode 0777"), "{err}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        bind_socket(&d.join("s.sock")).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_closed_connection_frees_its_slot_before_new_ones_are_accepted() {
        use std::io::BufRead;
        let d = dir("reap");
        let socket = d.join("s.sock");
        let text = format!(
            "[switch]\nname = \"reap\"\n[control]\nsocket = \"{}\"\n\
             [[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n\
             [[port]]\nname = \"b\"\ndevargs = \"net_null1\"\n",
            socket.display()
        );
        let config = Config::parse(&d.join("reap.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
        let mut server = ControlServer::open(&config).unwrap().expect("a socket");
        let hello = |stream: &mut UnixStream, server: &mut ControlServer| -> Value {
            stream
                .write_all(b"{\"v\":1,\"id\":1,\"cmd\":\"hello\"}\n")
                .unwrap();
            server.tick();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut line = String::new();
            std::io::BufReader::new(stream.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
        };
        // A client asks, reads its answer and hangs up; 31 more connect and stay.
        let mut first = UnixStream::connect(&socket).unwrap();
        assert_eq!(hello(&mut first, &mut server)["ok"], json!(true));
        let _idle: Vec<UnixStream> = (1..MAX_CONNECTIONS)
            .map(|_| UnixStream::connect(&socket).unwrap())
            .collect();
        server.tick();
        assert_eq!(
            server.conns.iter().filter(|c| c.is_some()).count(),
            MAX_CONNECTIONS
        );
        // Hung up before the next one connects: the next one takes its slot, in one tick.
        drop(first);
        let mut next = UnixStream::connect(&socket).unwrap();
        let reply = hello(&mut next, &mut server);
        assert_eq!(reply["ok"], json!(true), "{reply}");
        assert_eq!(
            server.conns.iter().filter(|c| c.is_some()).count(),
            MAX_CONNECTIONS
        );
        drop(server);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_p4_form_keeps_a_sid_clear_of_connected_subnets_too() {
        let d = dir("p4sid");
        let text = format!(
            "[switch]\nname = \"p4sid\"\nrouter_mac = \"02:00:00:00:01:00\"\n\
             [dataplane]\nmode = \"switch\"\nworker_lcores = [1]\n\
             [control]\nsocket = \"{}\"\n\
             [[port]]\nname = \"p0\"\ndevargs = \"net_null0\"\nipv6 = [\"2001:db8:ff::1/127\"]\n",
            d.join("s.sock").display()
        );
        let config = Config::parse(&d.join("p4sid.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
        let mut server = ControlServer::open(&config).unwrap().expect("a socket");
        let add = |prefix: &str| Command::TableAdd {
            table: "my_sid".into(),
            action: "end".into(),
            matches: vec!["default".into(), prefix.into()],
            params: vec!["0".into(), "0".into()],
        };
        let e = server
            .execute(0, &json!(1), add("2001:db8:ff::/64"))
            .unwrap_err();
        assert!(
            e.contains("2001:db8:ff::/64 covers the connected subnet 2001:db8:ff::/127 of p0"),
            "{e}"
        );
        // One clear of them goes on to the worker (none here).
        let e = server
            .execute(0, &json!(1), add("fcbb:bb00:1::/48"))
            .unwrap_err();
        assert!(e.contains("not running yet"), "{e}");
        drop(server);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn prefixes_parse_with_their_length_and_bare_addresses_are_hosts() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(parse_prefix("10.7.0.0/16"), Ok((ip("10.7.0.0"), 16)));
        assert_eq!(parse_prefix("2001:db8::1"), Ok((ip("2001:db8::1"), 128)));
        assert!(parse_prefix("10.7.0.0/33").unwrap_err().contains("0..=32"));
        assert!(
            parse_prefix("ten/8")
                .unwrap_err()
                .contains("not an IPv4 or IPv6 prefix")
        );
    }
}
