//! Who an MCP session serves: the name the client gave in `initialize`, and its process on this
//! machine — the parent of a stdio server, or the process holding the other end of a loopback
//! HTTP connection (found through `/proc/net/tcp{,6}` and the socket's inode among
//! `/proc/*/fd`). `glovebox turn-end` matches that process against its own ancestry, so a
//! client's hook ends that client's turns only. Nothing of it is a permission.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use runtime::SessionClient;

/// The client of the request's session: its name from the peer's `initialize`, its process from
/// the transport (`stdio_pid`, or the loopback connection the request came on).
pub(crate) fn of_request(
    context: &RequestContext<RoleServer>,
    stdio_pid: Option<u32>,
) -> SessionClient {
    let name = context
        .peer
        .peer_info()
        .map(|info| info.client_info.name.clone());
    let pid = stdio_pid.or_else(|| {
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<SocketAddr>>()?
            .0;
        loopback_peer_pid(peer)
    });
    SessionClient::new(name.as_deref(), pid)
}

/// The process on this machine whose socket is the other end of a loopback connection from
/// `peer`; `None` for a peer that is not loopback, or one whose process cannot be seen.
pub(crate) fn loopback_peer_pid(peer: SocketAddr) -> Option<u32> {
    if !peer.ip().is_loopback() && !is_mapped_loopback(peer.ip()) {
        return None;
    }
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .find_map(|table| socket_inode(&table, peer))?;
    let wanted = format!("socket:[{inode}]");
    let own = std::process::id();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str()) {
                return Some(pid);
            }
        }
    }
    None
}

fn is_mapped_loopback(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
}

/// The inode of the socket whose local address is `peer` in one `/proc/net/tcp{,6}` table.
fn socket_inode(table: &str, peer: SocketAddr) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let local = parse_address(fields.get(1)?)?;
        let same = local.port() == peer.port() && same_ip(local.ip(), peer.ip());
        let inode = fields.get(9)?.parse::<u64>().ok()?;
        (same && inode != 0).then_some(inode)
    })
}

fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    let plain = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    plain(a) == plain(b)
}

/// `0100007F:1F90` (an IPv4 address as one host-order word) or 32 hex digits (four host-order
/// words) and a port in hex.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(ip)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&word(ip.get(i * 8..i * 8 + 8)?)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_addresses_read_as_the_kernel_writes_them() {
        assert_eq!(
            parse_address("0100007F:1F90"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            parse_address("00000000000000000000000001000000:0050"),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            parse_address("0000000000000000FFFF00000100007F:0050"),
            Some("[::ffff:127.0.0.1]:80".parse().unwrap())
        );
        for bad in ["", "zz:1", "0100007F", "0100007F:GGGG", "01:0050"] {
            assert_eq!(parse_address(bad), None, "{bad}");
        }
    }

    /// A real loopback connection: its client end is this very process (which the lookup skips
    /// for the server's own sockets, so a child holds the client end here).
    #[test]
    fn a_loopback_connection_leads_to_the_process_at_its_other_end() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                &format!(
                    "import socket,sys,time\ns=socket.create_connection(('127.0.0.1',{port}))\nsys.stdout.write('x');sys.stdout.flush();time.sleep(30)"
                ),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (_conn, peer) = listener.accept().unwrap();
        let found = loopback_peer_pid(peer);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, Some(child.id()));
        assert_eq!(
            loopback_peer_pid("192.0.2.1:80".parse().unwrap()),
            None,
            "only loopback peers are looked up"
        );
    }
}
