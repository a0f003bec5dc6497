//! Links the addon against Node's N-API symbols, resolved at load time.
fn main() {
    napi_build::setup();
}
