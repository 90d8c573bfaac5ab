//! Which IP addresses the crawler may reach: the IANA IPv4 and IPv6
//! Special-Purpose Address Registries, written out as tables.
//!
//! Every block in those registries that is not globally reachable is refused,
//! and so are multicast, the deprecated IPv6 site-local block and a few
//! infrastructure blocks the registries do mark as reachable (nothing in them
//! serves a website, so refusing them costs nothing and keeps the tables
//! simple). IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4,
//! IPv4-compatible) are judged by that IPv4 address, so `[64:ff9b::a9fe:a9fe]`
//! is refused as the cloud metadata address it translates to.
//!
//! Each table is walked by `longest_match`: the most specific block that
//! contains the address decides, as in a routing table, so the order of the
//! entries does not matter and they can follow the registry's order.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 blocks that are not public, by the registry's names.
///
/// 192.0.0.0/24 holds two globally reachable /32s (192.0.0.9 PCP anycast and
/// 192.0.0.10 TURN anycast); they are refused with the rest of the block,
/// which is fine for a crawler. The registry marks 192.31.196.0/24 (AS112),
/// 192.52.193.0/24 (AMT), 192.88.99.0/24 (the retired 6to4 relay anycast) and
/// 192.175.48.0/24 (AS112 direct delegation) as reachable, but they are
/// routing and DNS infrastructure with no web content, so they are refused
/// too. Multicast is in a registry of its own and is never a web server.
const V4_BLOCKS: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\""),
    (Ipv4Addr::new(0, 0, 0, 0), 32, "unspecified"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private-use"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space (carrier-grade NAT)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private-use"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (TEST-NET-1)"),
    (Ipv4Addr::new(192, 31, 196, 0), 24, "AS112-v4"),
    (Ipv4Addr::new(192, 52, 193, 0), 24, "AMT"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast (deprecated)"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private-use"),
    (Ipv4Addr::new(192, 175, 48, 0), 24, "AS112 direct delegation"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation (TEST-NET-2)"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation (TEST-NET-3)"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved"),
    (Ipv4Addr::new(255, 255, 255, 255), 32, "limited broadcast"),
];

/// What an IPv6 block means for reachability.
#[derive(Clone, Copy, Debug)]
enum V6 {
    /// Not public, whatever follows the prefix.
    Refused(&'static str),
    /// Carries an IPv4 address in the 32 bits that end `shift` bits from the
    /// right, and is exactly as reachable as that address.
    Embeds { form: &'static str, shift: u32 },
    /// Carries an IPv4 address but is deprecated and refused whatever that
    /// address is; the IPv4 address is still named when it is itself not
    /// public, since that is the more telling reason.
    EmbedsDeprecated { form: &'static str, shift: u32, name: &'static str },
}

/// IPv6 blocks that are not public or that carry an IPv4 address.
///
/// Within 2001::/23 the registry marks a few anycast and ORCHIDv2 blocks as
/// globally reachable (2001:1::1/128, 2001:1::2/128, 2001:3::/32,
/// 2001:4:112::/48, 2001:20::/28, ...); none of them serves websites, so the
/// whole /23 is refused and only the better-known parts get their own names.
/// Teredo (2001::/32) does carry an IPv4 address, but obfuscated, and it is a
/// tunnel rather than a host, so it is refused outright.
const V6_BLOCKS: &[(Ipv6Addr, u8, V6)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 128, V6::Refused("unspecified")),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1), 128, V6::Refused("loopback")),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, V6::Embeds { form: "IPv4-mapped form", shift: 0 }),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        96,
        V6::EmbedsDeprecated { form: "IPv4-compatible form", shift: 0, name: "IPv4-compatible (deprecated)" },
    ),
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, V6::Embeds { form: "NAT64 form", shift: 0 }),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, V6::Refused("NAT64 local-use prefix")),
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, V6::Refused("discard-only")),
    (Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0), 64, V6::Refused("dummy prefix")),
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, V6::Refused("IETF protocol assignments")),
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, V6::Refused("Teredo")),
    (Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0), 48, V6::Refused("benchmarking")),
    (Ipv6Addr::new(0x2001, 0x10, 0, 0, 0, 0, 0, 0), 28, V6::Refused("ORCHID (deprecated)")),
    (Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28, V6::Refused("ORCHIDv2")),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, V6::Refused("documentation")),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, V6::Embeds { form: "6to4 form", shift: 80 }),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, V6::Refused("documentation")),
    (Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, V6::Refused("segment routing (SRv6) SIDs")),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, V6::Refused("unique local")),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, V6::Refused("link-local")),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, V6::Refused("site-local (deprecated)")),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, V6::Refused("multicast")),
];

/// Why an address is not public.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The address is in a block that is not globally reachable (the block's
    /// registry name).
    Block(&'static str),
    /// An IPv6 address that stands for an IPv4 address which is not public,
    /// such as the NAT64 form of 169.254.169.254.
    Embedded { form: &'static str, v4: Ipv4Addr, block: &'static str },
}

impl Reason {
    /// The registry name of the block that decided.
    pub fn block(&self) -> &'static str {
        match self {
            Reason::Block(name) | Reason::Embedded { block: name, .. } => name,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Block(name) => f.write_str(name),
            Reason::Embedded { form, v4, block } => write!(f, "the {form} of {v4}, {block}"),
        }
    }
}

/// Why `ip` is not a public address, or `None` when it is.
pub fn classify(ip: IpAddr) -> Option<Reason> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4).map(Reason::Block),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// Whether the crawler may connect to `ip`.
pub fn is_public(ip: IpAddr) -> bool {
    classify(ip).is_none()
}

/// Every form of the registries' blocks that a check must refuse: the first
/// and last address of each block, and for each IPv4 block's first and last
/// address its IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms. What the
/// hardening harness (`fuzz/src/hostile.rs`) and the tests walk.
pub fn special_purpose_forms() -> Vec<IpAddr> {
    let mut forms = Vec::new();
    for &(network, len, _) in V4_BLOCKS {
        let first = network.to_bits();
        let last = first | u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
        for v4 in [Ipv4Addr::from_bits(first), Ipv4Addr::from_bits(last)] {
            let bits = u128::from(v4.to_bits());
            forms.push(IpAddr::V4(v4));
            forms.push(IpAddr::V6(v4.to_ipv6_mapped()));
            forms.push(IpAddr::V6(Ipv6Addr::from_bits(bits)));
            forms.push(IpAddr::V6(Ipv6Addr::from_bits(0x0064_ff9b_u128 << 96 | bits)));
            forms.push(IpAddr::V6(Ipv6Addr::from_bits(0x2002_u128 << 112 | bits << 80)));
        }
    }
    for &(network, len, _) in V6_BLOCKS {
        let first = network.to_bits();
        let last = first | u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
        forms.push(IpAddr::V6(Ipv6Addr::from_bits(first)));
        forms.push(IpAddr::V6(Ipv6Addr::from_bits(last)));
    }
    forms
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u128::from(ip.to_bits());
    longest_match(V4_BLOCKS.iter().map(|&(net, len, name)| (u128::from(net.to_bits()), len, name)), bits, 32)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Reason> {
    let bits = ip.to_bits();
    let entry =
        longest_match(V6_BLOCKS.iter().map(|&(net, len, what)| (net.to_bits(), len, what)), bits, 128)?;
    // Truncating to 32 bits is the point: it takes out the embedded IPv4 address.
    let embedded = |shift: u32| Ipv4Addr::from_bits((bits >> shift) as u32);
    match entry {
        V6::Refused(name) => Some(Reason::Block(name)),
        V6::Embeds { form, shift } => {
            let v4 = embedded(shift);
            classify_v4(v4).map(|block| Reason::Embedded { form, v4, block })
        }
        V6::EmbedsDeprecated { form, shift, name } => {
            let v4 = embedded(shift);
            Some(match classify_v4(v4) {
                Some(block) => Reason::Embedded { form, v4, block },
                None => Reason::Block(name),
            })
        }
    }
}

/// The value of the most specific `(network, prefix length, value)` entry
/// that contains `address`, all of them `width` bits wide (32 or 128) and
/// kept in the low bits of a `u128`.
fn longest_match<T>(table: impl Iterator<Item = (u128, u8, T)>, address: u128, width: u32) -> Option<T> {
    let mut best: Option<(u8, T)> = None;
    for (network, len, value) in table {
        let host_bits = width.saturating_sub(u32::from(len));
        // A /0 would shift by the whole width, which overflows for IPv6.
        let same = host_bits >= 128 || (network >> host_bits) == (address >> host_bits);
        if same && best.as_ref().is_none_or(|(longest, _)| len > *longest) {
            best = Some((len, value));
        }
    }
    best.map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_every_registry_block_is_refused() {
        let forms = special_purpose_forms();
        assert!(forms.len() > 200, "{}", forms.len());
        let accepted: Vec<_> = forms.iter().filter(|ip| is_public(**ip)).collect();
        assert!(accepted.is_empty(), "accepted: {accepted:?}");
    }

    #[test]
    fn every_special_purpose_address_is_refused_with_its_block_name() {
        for (address, why) in [
            // IPv4.
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "this network"),
            ("10.1.2.3", "private-use"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.254", "carrier-grade NAT"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("169.254.169.254", "link-local"),
            ("172.16.0.1", "private-use"),
            ("172.31.255.254", "private-use"),
            ("192.0.0.8", "IETF protocol assignments"),
            ("192.0.0.9", "IETF protocol assignments"),
            ("192.0.2.1", "TEST-NET-1"),
            ("192.31.196.1", "AS112-v4"),
            ("192.52.193.1", "AMT"),
            ("192.88.99.1", "6to4 relay"),
            ("192.168.1.1", "private-use"),
            ("192.175.48.1", "AS112 direct delegation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.254", "benchmarking"),
            ("198.51.100.1", "TEST-NET-2"),
            ("203.0.113.1", "TEST-NET-3"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.254", "reserved"),
            ("255.255.255.255", "limited broadcast"),
            // IPv6.
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:10.0.0.1", "the IPv4-mapped form of 10.0.0.1, private-use"),
            ("::ffff:127.0.0.1", "the IPv4-mapped form of 127.0.0.1, loopback"),
            ("::127.0.0.1", "the IPv4-compatible form of 127.0.0.1, loopback"),
            ("::93.184.216.34", "IPv4-compatible (deprecated)"),
            ("::2", "the IPv4-compatible form of 0.0.0.2, \"this network\""),
            ("64:ff9b::a9fe:a9fe", "the NAT64 form of 169.254.169.254, link-local"),
            ("64:ff9b::7f00:1", "the NAT64 form of 127.0.0.1, loopback"),
            ("64:ff9b:1::5db8:d822", "NAT64 local-use"),
            ("100::1", "discard-only"),
            ("100:0:0:1::1", "dummy prefix"),
            ("2001::1", "Teredo"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2001:2::1", "benchmarking"),
            ("2001:10::1", "ORCHID (deprecated)"),
            ("2001:20::1", "ORCHIDv2"),
            ("2001:1::1", "IETF protocol assignments"),
            ("2001:1ff::1", "IETF protocol assignments"),
            ("2001:db8::1", "documentation"),
            ("2002:7f00:1::", "the 6to4 form of 127.0.0.1, loopback"),
            ("2002:a9fe:a9fe::1", "the 6to4 form of 169.254.169.254, link-local"),
            ("2002:c0a8:101::", "the 6to4 form of 192.168.1.1, private-use"),
            ("3fff::1", "documentation"),
            ("3fff:fff::1", "documentation"),
            ("5f00::1", "SRv6"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("feff::1", "site-local"),
            ("ff02::1", "multicast"),
            ("ff0e::1", "multicast"),
        ] {
            let ip: IpAddr = address.parse().unwrap();
            let reason = classify(ip).unwrap_or_else(|| panic!("{address} is not public ({why})"));
            assert!(reason.to_string().contains(why), "{address}: {reason} should say {why:?}");
            assert!(!is_public(ip), "{address}");
        }
    }

    #[test]
    fn ordinary_public_addresses_are_allowed() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.167.255.255",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.254",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2001:200::1",
            "2a00:1450:4001::200e",
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
            "64:ff9b::808:808",
            "2002:5db8:d822::",
            "2002:5db8:d822:1::1",
        ] {
            let ip: IpAddr = address.parse().unwrap();
            assert_eq!(classify(ip), None, "{address} is public");
            assert!(is_public(ip), "{address}");
        }
    }

    #[test]
    fn address_tables_match_the_most_specific_block() {
        // The /32 inside 0.0.0.0/8 and the /128s inside ::/96 win over the larger block.
        assert_eq!(classify("0.0.0.0".parse().unwrap()), Some(Reason::Block("unspecified")));
        assert_eq!(classify("::1".parse().unwrap()), Some(Reason::Block("loopback")));
        // Teredo is named inside the IETF protocol assignments.
        assert_eq!(classify("2001::".parse().unwrap()).map(|r| r.block()), Some("Teredo"));
        let nat64 = classify("64:ff9b::a9fe:a9fe".parse().unwrap());
        assert_eq!(
            nat64,
            Some(Reason::Embedded {
                form: "NAT64 form",
                v4: Ipv4Addr::new(169, 254, 169, 254),
                block: "link-local"
            })
        );
        assert_eq!(longest_match([(0u128, 0u8, "all")].into_iter(), u128::MAX, 128), Some("all"));
    }
}
