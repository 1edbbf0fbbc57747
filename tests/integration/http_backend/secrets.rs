//! No credential in any output: keys and URL credentials are sent but never shown
//! in errors, logs or saves.

use super::*;

const URL_SECRETS: [&str; 4] = ["alice-USER", "pa55-SECRET", "QKEY-SECRET", "tok-SECRET"];

/// `base_url` with a user, a password and secret query parameters.
fn with_url_credentials(base_url: &str) -> String {
    format!(
        "{}?api_key=QKEY-SECRET&token=tok-SECRET&api-version=2024-06-01",
        base_url.replace("http://", "http://alice-USER:pa55-SECRET@")
    )
}

fn assert_no_url_secrets(what: &str, text: &str) {
    for secret in URL_SECRETS {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {what}: {text}"
        );
    }
}

#[test]
fn a_404_echoing_the_key_is_scrubbed_and_not_retried() {
    let mut s = setup("404", |_| {});
    s.server.push(FakeReply::status(
        404,
        &format!(r#"{{"error":{{"message":"no model for key {KEY}"}}}}"#),
    ));
    s.say_and_wait("Hello?");
    let ReplyError::Backend(BackendError::Http {
        status: 404,
        reason,
        ..
    }) = s.failure()
    else {
        panic!("expected HTTP 404, got {:?}", s.failure());
    };
    assert_eq!(reason, "no model for key <redacted>");
    assert_eq!(s.server.received().len(), 1);
    s.finish("Hello?");
}

#[test]
fn a_missing_key_is_reported_by_variable_name() {
    let error =
        OpenAiBackend::new(OpenAiConfig::deepseek().with_api_key_env("NPC_MEMORY_TEST_UNSET_KEY"))
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no API key for provider deepseek: set the environment variable NPC_MEMORY_TEST_UNSET_KEY"
    );
}

#[test]
fn credentials_in_the_base_url_are_sent_but_never_shown() {
    let mut s = setup("url-secrets", |config| {
        config.base_url = with_url_credentials(&config.base_url)
    });
    s.server.push(FakeReply::status(
        404,
        r#"{"error":{"message":"no model at /v1/chat/completions?api_key=QKEY-SECRET&token=tok-SECRET for alice-USER:pa55-SECRET"}}"#,
    ));
    s.say_and_wait("Hello?");
    assert_eq!(
        s.server.received()[0].path,
        "/v1/chat/completions?api_key=QKEY-SECRET&token=tok-SECRET&api-version=2024-06-01",
        "the query stays on the endpoint"
    );
    let failure = s.failure();
    assert!(
        matches!(
            failure,
            ReplyError::Backend(BackendError::Http { status: 404, .. })
        ),
        "{failure:?}"
    );
    assert_no_url_secrets("the error", &format!("{failure} {failure:?}"));
    assert!(failure.to_string().contains("no model at"), "{failure}");
    let config = s.backend.config().clone();
    assert_no_url_secrets("the config's Debug", &format!("{config:?}"));
    assert!(format!("{config:?}").contains("127.0.0.1"), "{config:?}");
    assert_no_url_secrets("the backend's Debug", &format!("{:?}", s.backend));
    s.finish("Hello?");
    let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
    assert_no_url_secrets("the logs", &logs);
}

#[test]
fn credentials_in_the_base_url_stay_out_of_connection_errors() {
    captured_logs();
    // A port nobody listens on: the error is reqwest's, which names the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = OpenAiConfig::custom(
        "fake",
        with_url_credentials(&format!("http://127.0.0.1:{port}/v1")),
        "fake-model",
    );
    config.retry = RetryPolicy::none();
    let backend = OpenAiBackend::with_api_key(config, ApiKey::new(KEY)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = runtime
        .block_on(backend.complete(
            reply_request("You are ECHO-7.", "Hello?"),
            Progress::silent(),
        ))
        .unwrap_err();
    let BackendError::Connection { reason, .. } = &error else {
        panic!("expected a connection error, got {error:?}");
    };
    assert!(reason.contains("127.0.0.1"), "{reason}");
    assert_no_url_secrets("the error", &format!("{error} {error:?}"));
    assert_no_url_secrets("the backend's Debug", &format!("{backend:?}"));
}
