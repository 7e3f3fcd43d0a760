//! TLS for the process's HTTP clients (model providers, judges, OTLP
//! collectors): rustls with `ring` as its cryptography.
//!
//! reqwest's own `rustls` feature would bring aws-lc-rs, whose C build (with
//! cmake) was the largest single step of a cold `cargo build --release`
//! (issue 28); `ring` builds in seconds. Without a default provider reqwest
//! panics when a client is built, so every place that builds one calls
//! [`install`] first (and `main` does, at start).

/// Make `ring` the process's default rustls provider (once; later calls and
/// a provider someone else installed first are left alone).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err only when a provider is already installed: that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_and_speaks_tls_with_ring() {
        super::install();
        super::install();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        // A client with certificate verification (the platform verifier) builds.
        reqwest::Client::builder().build().expect("client");
    }
}
