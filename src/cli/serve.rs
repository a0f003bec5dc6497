//! `mcppol serve`: the decision service. A long-running process, so that a
//! host pays a loopback request, not a process start, per decision:
//!
//! - `POST /v1/hooks/HOST`: the same contract as `mcppol hook HOST` (the
//!   same code: `crate::hosts::run`, `crate::claude::run_hook`), the policy
//!   taken from the store;
//! - `POST /v1/decide` and `POST /v1/explain`: a request in the shape
//!   `eval --request` reads (plus `"policy": NAME`), answered with what
//!   `eval` and `explain --format json` print;
//! - `GET /v1/status` (the store's status) and `GET /healthz`.
//!
//! Policies hot-reload through the [`Store`](crate::Store); bodies are
//! bounded. With `--tokens FILE`, or `--jwks FILE_OR_URL --issuer ISS
//! --audience AUD` as the gateway takes them, every route but `/healthz`
//! needs a bearer token (`crate::http_auth`: a token of the file, or a JWT
//! the key set verifies), and a `/v1/decide` or `/v1/explain` request is
//! made for the token's principal and assigns; without either, `serve`
//! listens on loopback only.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use serde_json::{json, Value};

use super::request_file::parse_requests;
use super::{exit, usage_error};
use crate::bundle::{self, BundleFeed, Location};
use crate::claude::event::MAX_INPUT_BYTES;
use crate::claude::{run_hook, HookConfig, HookOutput};
use crate::enforce::render::decision_json;
use crate::hosts::{self, Host};
use crate::http_auth::{Authenticator, JwtConfig, JwtVerifier, Principal, TokenFile};
use crate::{BundleStamp, LoadOptions, Policy, Store, Watch};

/// The largest `/v1/decide` or `/v1/explain` body.
const MAX_REQUEST_BODY: usize = 1 << 20;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The policy file or folder (every `*.mcppol` below it); reloaded when
    /// it changes.
    #[arg(
        long,
        value_name = "PATH",
        required_unless_present = "bundle",
        conflicts_with = "bundle"
    )]
    pub policy: Option<PathBuf>,
    /// Instead of --policy: a signed bundle (`mcppol bundle build`), an
    /// http(s) URL or a `file:///` path, polled; each new revision is
    /// verified with --bundle-pub and swapped in whole.
    #[arg(long, value_name = "URL", requires = "bundle_pub")]
    pub bundle: Option<String>,
    /// The Ed25519 public key (PEM) every bundle must be signed with.
    #[arg(long = "bundle-pub", value_name = "PEM", requires = "bundle")]
    pub bundle_pub: Option<PathBuf>,
    /// How often the bundle is checked, in seconds (at least 1; after a
    /// failure the wait doubles, up to 8 times this).
    #[arg(
        long = "bundle-poll",
        value_name = "SECS",
        default_value_t = 30,
        requires = "bundle"
    )]
    pub bundle_poll: u64,
    /// The policy the hooks enforce, when PATH holds several.
    #[arg(long, value_name = "POLICY")]
    pub name: Option<String>,
    /// The address to listen on; one other than loopback needs --tokens or
    /// --jwks.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8181")]
    pub listen: SocketAddr,
    /// The MCP server ids, comma-separated (see `mcppol hook --servers`).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub servers: Vec<String>,
    /// Where the hooks' session taint files live (see `mcppol hook`).
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Where replicas share state: `redis://HOST:PORT/DB` keeps the
    /// budgets' counters in that Redis (see docs/fleet.md); without it,
    /// this process's memory.
    #[arg(long, value_name = "URL")]
    pub state: Option<String>,
    /// Append one JSON line per hook decision to FILE.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// The bearer tokens callers must send (a tokens file: see
    /// docs/hosts.md); this or --jwks is required to listen on an address
    /// other than loopback.
    #[arg(long, value_name = "FILE", conflicts_with = "jwks")]
    pub tokens: Option<PathBuf>,
    /// Callers send JWTs verified against this JWKS (a file or an https
    /// URL), as `mcppol gateway --jwks` does; needs --issuer and
    /// --audience.
    #[arg(long, value_name = "FILE_OR_URL", requires_all = ["issuer", "audience"])]
    pub jwks: Option<String>,
    /// The JWTs' `iss`.
    #[arg(long, value_name = "ISS", requires = "jwks")]
    pub issuer: Option<String>,
    /// The JWTs' `aud`.
    #[arg(long, value_name = "AUD", requires = "jwks")]
    pub audience: Option<String>,
    /// Export one span per `/v1/decide` decision, and the decision
    /// metrics, to this OpenTelemetry collector (OTLP over HTTP: its base
    /// URL, such as `http://127.0.0.1:4318`); without it,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (docs/fleet.md).
    #[cfg(feature = "otel")]
    #[arg(long = "otlp-endpoint", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

struct App {
    store: Arc<Store>,
    /// The budgets' counters: a `/v1/decide` allow takes from them (the
    /// host acts on it).
    budgets: Arc<dyn crate::Budgets>,
    /// The bundle the policies come from (`--bundle`).
    feed: Option<Arc<BundleFeed>>,
    name: Option<String>,
    hook: HookConfig,
    auth: Option<Authenticator>,
}

pub fn run(args: ServeArgs) -> u8 {
    if !args.listen.ip().is_loopback() && args.tokens.is_none() && args.jwks.is_none() {
        return usage_error(
            &format!("--listen {}: not a loopback address, and no --tokens or --jwks", args.listen),
            Some("without bearer tokens mcppol serve answers anyone who can reach it: listen on 127.0.0.1 or ::1, or give --tokens FILE or --jwks FILE_OR_URL --issuer ISS --audience AUD"),
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("cannot start the runtime: {e}"), None),
    };
    let auth = match (&args.tokens, &args.jwks, &args.issuer, &args.audience) {
        (Some(path), ..) => match TokenFile::read(path) {
            Ok(tokens) => Some(Authenticator::Tokens(tokens)),
            Err(e) => return usage_error(&format!("--tokens: {e}"), None),
        },
        // The gateway's verifier, read once now (a key set that cannot be
        // read is a usage error, before anything listens).
        (None, Some(jwks), Some(issuer), Some(audience)) => {
            match runtime.block_on(JwtVerifier::new(JwtConfig::new(jwks, issuer, audience))) {
                Ok(verifier) => Some(Authenticator::Jwt(verifier)),
                Err(e) => return usage_error(&format!("--jwks: {e}"), None),
            }
        }
        _ => None,
    };
    let (store, feed, policy_path) = match (&args.policy, &args.bundle) {
        (Some(policy), _) => {
            let store = match Store::open([policy], LoadOptions::default()) {
                Ok(s) => s,
                Err(e) => {
                    eprint!("{}", e.render(super::color()));
                    return exit::USAGE;
                }
            };
            if let Err(e) = store.watch(Watch::events()) {
                eprint!("{}", e.render(super::color()));
                return exit::USAGE;
            }
            (Arc::new(store), None, policy.clone())
        }
        (None, Some(url)) => match runtime.block_on(first_bundle(url, &args)) {
            Ok((store, feed)) => (
                Arc::new(store),
                Some(feed),
                PathBuf::from(format!("<bundle {url}>")),
            ),
            Err(status) => return status,
        },
        (None, None) => return usage_error("give --policy PATH or --bundle URL", None),
    };
    // One store for `/v1/decide` and every hook route (a Redis connection
    // manager runs on this runtime).
    let budgets = {
        let _entered = runtime.enter();
        super::state::budgets(args.state.as_deref())
    };
    let budgets = match budgets {
        Ok(b) => b,
        Err(e) => return usage_error(&e, None),
    };
    let app = App {
        feed,
        name: args.name.clone(),
        hook: HookConfig {
            policy: policy_path,
            name: args.name,
            servers: args.servers,
            builtin_server: String::new(),
            state_dir: args.state_dir,
            audit: args.audit,
            home: crate::claude::place::home_from_env(),
            preloaded: None,
            budgets: Some(budgets.clone()),
            bundle: None,
        },
        store,
        budgets,
        auth,
    };
    if let Err(e) = pick(&app, None) {
        return usage_error(&e, Some("give --name POLICY"));
    }
    // The spans name the policy `--name` picks (or the only one).
    #[cfg(feature = "otel")]
    let _otel = {
        let name = app
            .name
            .clone()
            .or_else(|| app.store.names().first().cloned())
            .unwrap_or_default();
        match crate::otel::install(args.otlp_endpoint.as_deref(), &app.store, &name) {
            Ok(guard) => guard,
            Err(e) => return usage_error(&e, None),
        }
    };
    runtime.block_on(serve(Arc::new(app), args.listen))
}

/// `--bundle`: the store of the first bundle, which must load (a replica
/// never starts without a verified policy), and the feed that polls for
/// the next ones.
async fn first_bundle(url: &str, args: &ServeArgs) -> Result<(Store, Arc<BundleFeed>), u8> {
    super::proxy::init_logging();
    let location = Location::parse(url).map_err(|e| usage_error(&e, None))?;
    let Some(key_path) = &args.bundle_pub else {
        return Err(usage_error("--bundle needs --bundle-pub PEM", None));
    };
    let key = bundle::read_verifying_key(key_path).map_err(|e| {
        eprint!("{}", e.render(super::color()));
        exit::USAGE
    })?;
    let feed = BundleFeed::new(location, key, Duration::from_secs(args.bundle_poll))
        .map_err(|e| usage_error(&e, None))?;
    let store = Store::empty(LoadOptions::default());
    if let Err(e) = feed.check(&store).await {
        let mut e = e;
        e.message = format!(
            "--bundle {url}: no good bundle to start with: {}",
            e.message
        );
        eprint!("{}", e.render(super::color()));
        return Err(exit::USAGE);
    }
    Ok((store, Arc::new(feed)))
}

async fn serve(app: Arc<App>, addr: SocketAddr) -> u8 {
    let router = Router::new()
        .route(
            "/v1/hooks/{host}",
            post(hook).layer(DefaultBodyLimit::max(MAX_INPUT_BYTES)),
        )
        .route("/v1/decide", post(decide))
        .route("/v1/explain", post(explain))
        .route("/v1/status", get(status))
        .route("/healthz", get(|| async { "ok\n" }))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .with_state(Arc::clone(&app));
    if let Some(feed) = app.feed.clone() {
        let app = Arc::clone(&app);
        tokio::spawn(async move { feed.poll(&app.store).await });
    }
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => return usage_error(&format!("cannot listen on {addr}: {e}"), None),
    };
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    eprintln!("mcppol serve: listening on http://{local}");
    match axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    {
        Ok(()) => exit::OK,
        Err(e) => usage_error(&format!("the listener failed: {e}"), None),
    }
}

/// The policy `name` (or `--name`, or the only one) from the store.
fn pick(app: &App, name: Option<&str>) -> Result<Arc<Policy>, String> {
    pick_stamped(app, name).map(|(policy, _)| policy)
}

/// The policy, and the bundle it came from (one snapshot of the store).
fn pick_stamped(app: &App, name: Option<&str>) -> Result<Picked, String> {
    let name = match name.or(app.name.as_deref()) {
        Some(n) => n.to_string(),
        None => match app.store.names().as_slice() {
            [only] => only.clone(),
            names => {
                return Err(format!(
                    "name the policy: the store holds {} ({})",
                    names.len(),
                    names.join(", ")
                ))
            }
        },
    };
    match app.store.get_stamped(&name) {
        (Some(policy), stamp) => Ok((policy, stamp)),
        (None, _) => Err(format!("no policy `{name}` is loaded")),
    }
}

/// A policy and the bundle stamp it was swapped in with.
type Picked = (Arc<Policy>, Option<Arc<BundleStamp>>);

/// A JSON body (one line) with `status` (axum's `json` feature is off).
fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    (status, headers, format!("{value}\n")).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

/// The caller, when `--tokens` or `--jwks` is given: `Ok(None)` without it, a 401
/// (with its `WWW-Authenticate`) for a missing or bad token.
async fn caller(app: &App, headers: &HeaderMap) -> Result<Option<Principal>, Response> {
    let Some(auth) = &app.auth else {
        return Ok(None);
    };
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth.authenticate(header).await {
        Ok(who) => Ok(Some(who)),
        Err(e) => {
            let mut response = error(StatusCode::UNAUTHORIZED, &e.to_string());
            if let Ok(v) = HeaderValue::from_str(&e.www_authenticate()) {
                response
                    .headers_mut()
                    .insert(axum::http::header::WWW_AUTHENTICATE, v);
            }
            Err(response)
        }
    }
}

/// `POST /v1/hooks/HOST`: the hook's answer. Claude Code's `http` handler
/// reads the hook JSON from a 200 (any other status fails open there), so
/// every answer is a 200; the exit status a command hook would have had is
/// in `mcppol-exit-status`, and a refusal that a command hook gives as exit
/// 2 with stderr is, for Claude Code, its deny JSON.
async fn hook(
    State(app): State<Arc<App>>,
    UrlPath(host): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(host) = Host::from_name(&host) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("`{}` is not a host mcppol hook knows", host.escape_debug()),
        );
    };
    // A hook's caller is the host: a refusal must be one it blocks on (a
    // 401 is not, for Claude Code's http handler).
    if let Err(refused) = caller(&app, &headers).await {
        let why = format!("mcppol serve refused the request ({})", refused.status());
        let out = match host.spec() {
            Some(spec) => hosts::refuse(spec, &why),
            None => HookOutput {
                stdout: None,
                stderr: Some(format!("{}\n", crate::enforce::render::hook_failed(&why))),
                status: 2,
            },
        };
        return hook_response(host, out);
    }
    let mut config = app.hook.clone();
    if config.builtin_server.is_empty() {
        config.builtin_server = host.as_str().to_string();
    }
    // The store's policy (hot-reloaded); when it cannot be picked the hook
    // loads the file itself and refuses as it would.
    if let Ok((policy, stamp)) = pick_stamped(&app, None) {
        config.preloaded = Some(policy);
        config.bundle = stamp;
    }
    let run = tokio::task::spawn_blocking(move || match host.spec() {
        Some(spec) => hosts::run(spec, &config, &body),
        None => run_hook(&config, &body),
    })
    .await;
    let out = run.unwrap_or_else(|e| HookOutput {
        stdout: None,
        stderr: Some(format!("mcppol serve: the hook failed: {e}\n")),
        status: 2,
    });
    hook_response(host, out)
}

fn hook_response(host: Host, out: HookOutput) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        "mcppol-exit-status",
        HeaderValue::from(u16::from(out.status)),
    );
    let body = match (&out.stdout, &out.stderr) {
        (Some(stdout), _) => stdout.clone(),
        (None, Some(stderr)) if host == Host::Claude && out.status == 2 => {
            let deny = json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": stderr.trim_end(),
            }});
            format!("{deny}\n")
        }
        (None, Some(stderr)) => stderr.clone(),
        (None, None) => String::new(),
    };
    let kind = if out.stdout.is_some() || host == Host::Claude {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static(kind),
    );
    (StatusCode::OK, headers, body).into_response()
}

/// The request of a `/v1/decide` or `/v1/explain` body, and its policy.
fn request_of(
    app: &App,
    body: &[u8],
    who: Option<Principal>,
) -> Result<(Picked, crate::eval::owned::OwnedRequest), String> {
    let mut value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Some(object) = value.as_object_mut() else {
        return Err("the body is not a JSON object".to_string());
    };
    let name = match object.remove("policy") {
        None => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err("`policy` is not a string".to_string()),
    };
    let mut requests = parse_requests(&value.to_string(), "the body", Path::new(""))?;
    let Some(request) = requests.pop() else {
        return Err("the body holds no request".to_string());
    };
    if !request.host.is_empty() {
        return Err(
            "`host` is not read by mcppol serve: its policies are loaded once for every request"
                .to_string(),
        );
    }
    let mut owned = request.request;
    // With tokens, the request is made for the token's principal, whatever
    // the body says.
    if let Some(who) = who {
        owned.principal = Some(who.name);
        owned.assigns = Some(who.assigns);
    }
    Ok((pick_stamped(app, name.as_deref())?, owned))
}

/// `POST /v1/decide`: what `eval --format json` prints.
async fn decide(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    #[cfg(feature = "otel")]
    let started = std::time::SystemTime::now();
    let who = match caller(&app, &headers).await {
        Ok(who) => who,
        Err(refused) => return refused,
    };
    match request_of(&app, &body, who) {
        Ok(((policy, stamp), owned)) => {
            let decision = owned.with_request(|request| policy.decide(request));
            // The host acts on an allow: it takes from the call's budgets.
            // An ask is only checked (the host settles it; serve never
            // hears the answer, so it never counts).
            let decision = if owned.kind == crate::TargetKind::Tool {
                let caller = crate::budget::Caller {
                    principal: owned.principal.as_deref(),
                    session: None,
                };
                let charges = crate::budget::Charges::of(
                    &policy,
                    &owned.server,
                    &owned.name,
                    caller,
                    crate::budget::now_seconds(),
                );
                let stage = crate::budget::stage_of(&decision);
                charges.apply(&*app.budgets, decision, stage).await
            } else {
                decision
            };
            #[cfg(feature = "otel")]
            span_of_decision(&owned, &decision, stamp.as_deref(), started);
            let mut answer = decision_json(&decision);
            // Running from a bundle: which revision decided.
            if let (Some(stamp), Some(map)) = (stamp, answer.as_object_mut()) {
                map.insert(
                    "bundle".into(),
                    json!({"revision": stamp.revision, "digest": stamp.digest}),
                );
            }
            json_response(StatusCode::OK, &answer)
        }
        Err(e) => error(StatusCode::BAD_REQUEST, &e),
    }
}

/// The spans of a `/v1/decide` decision, when an exporter runs: the
/// record an audit line would carry (never the arguments: their digest),
/// naming the bundle of the snapshot that decided.
#[cfg(feature = "otel")]
fn span_of_decision(
    owned: &crate::eval::owned::OwnedRequest,
    decision: &crate::Decision,
    bundle: Option<&BundleStamp>,
    started: std::time::SystemTime,
) {
    use crate::enforce::{AuditRecord, Outcome, Settled};
    use crate::TargetKind;
    if !crate::otel::active() {
        return;
    }
    let method = match owned.kind {
        TargetKind::Resource => "resources/read",
        TargetKind::Prompt => "prompts/get",
        _ => "tools/call",
    };
    // An ask is the host's to settle: serve never hears the answer.
    let settled = if decision.decision == crate::Verdict::Ask {
        Settled::Host
    } else {
        Settled::NotAsked
    };
    let mut outcome = Outcome::decided(
        owned.server.as_str().into(),
        owned.kind,
        Some(&owned.name),
        decision.clone(),
        settled,
    );
    if owned.kind != TargetKind::Resource {
        outcome.args_digest = Some(crate::pipeline::args_digest(&owned.args));
    }
    let record = AuditRecord::of(&outcome)
        .with_bundle(bundle.map(|b| (b.revision.as_str(), b.digest.as_str())));
    let meta = crate::otel::RequestMeta {
        method,
        request_id: String::new(),
        transport: "tcp",
        session_id: None,
        protocol_version: None,
    };
    crate::otel::decided(meta, started, &record);
}

/// `POST /v1/explain`: what `explain --format json` prints.
async fn explain(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let who = match caller(&app, &headers).await {
        Ok(who) => who,
        Err(refused) => return refused,
    };
    match request_of(&app, &body, who) {
        Ok(((policy, _), owned)) => {
            let explanation = owned.with_request(|request| policy.explain(request));
            let text = crate::escape::json_text(&explanation.to_json(&policy));
            let mut headers = HeaderMap::new();
            headers.insert(
                axum::http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            (StatusCode::OK, headers, format!("{text}\n")).into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, &e),
    }
}

/// `GET /v1/status`: the store's status (policies, generation, digests,
/// the last reload error).
async fn status(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(refused) = caller(&app, &headers).await {
        return refused;
    }
    let mut status = app.store.status().to_json();
    if let (Some(feed), Some(map)) = (&app.feed, status.as_object_mut()) {
        map.insert("bundle".into(), feed.status_json());
    }
    json_response(StatusCode::OK, &status)
}
