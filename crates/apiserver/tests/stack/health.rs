//! `/readyz`, `/livez` and `/healthz` with the process's checks (`Config::health`: its
//! supervised components, `shutdown`) beside the server's own.

use super::{ADMIN, request_as, send_raw, server};
use http::{Method, StatusCode};
use kyb_apiserver::{Config, Stack};
use kyb_component::{Health, Probe, State};
use kyb_serving::Body;

/// A GET as the admin: (status, text).
async fn get(stack: &Stack, path: &str) -> anyhow::Result<(StatusCode, String)> {
    let request = request_as(ADMIN, Method::GET, path, Body::empty());
    let (status, bytes) = send_raw(stack, request).await?;
    Ok((status, String::from_utf8(bytes.to_vec())?))
}

#[tokio::test]
async fn the_process_checks_are_reported_beside_the_server_s() -> anyhow::Result<()> {
    let health = Health::new();
    for probe in [Probe::Ready, Probe::Live] {
        health.set("component/scheduler", probe, State::Ok);
    }
    health.set("shutdown", Probe::Ready, State::Ok);
    let config = Config {
        health: health.clone(),
        ..Config::default()
    };
    let server = server(config, Vec::new()).await?;
    let stack = &server.stack;

    let (code, text) = get(stack, "/readyz?verbose").await?;
    assert_eq!(code, StatusCode::OK, "{text}");
    assert!(
        text.ends_with(
            "[+]poststarthook/bootstrap-controller ok\n[+]component/scheduler ok\n[+]shutdown ok\nreadyz check passed\n"
        ),
        "{text}"
    );
    assert_eq!(
        get(stack, "/readyz/component/scheduler").await?,
        (StatusCode::OK, "ok".to_string())
    );

    // Down: not ready and not live, the reason withheld.
    for probe in [Probe::Ready, Probe::Live] {
        health.set("component/scheduler", probe, State::failed("no kubeconfig"));
    }
    let (code, text) = get(stack, "/readyz?verbose").await?;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(
        text.contains("[-]component/scheduler failed: reason withheld\n[+]shutdown ok\n"),
        "{text}"
    );
    assert!(text.ends_with("readyz check failed\n"), "{text}");
    assert!(!text.contains("no kubeconfig"), "{text}");
    assert_eq!(
        get(stack, "/readyz/component/scheduler").await?,
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal server error: component/scheduler failed".to_string()
        )
    );
    let (code, text) = get(stack, "/livez").await?;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(!text.contains("shutdown"), "readiness only: {text}");
    assert_eq!(
        get(stack, "/healthz").await?.0,
        StatusCode::INTERNAL_SERVER_ERROR
    );

    // Back, then shutting down: ready no more, still live.
    for probe in [Probe::Ready, Probe::Live] {
        health.set("component/scheduler", probe, State::Ok);
    }
    health.set("shutdown", Probe::Ready, State::failed("shutting down"));
    let (code, text) = get(stack, "/readyz?verbose").await?;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(
        text.contains("[-]shutdown failed: reason withheld"),
        "{text}"
    );
    assert_eq!(
        get(stack, "/livez").await?,
        (StatusCode::OK, "ok".to_string())
    );
    assert_eq!(
        get(stack, "/readyz/component/kubelet").await?.0,
        StatusCode::NOT_FOUND
    );
    Ok(())
}
