# Sourced by scripts/instructions-per-call.sh and scripts/cpu-per-call.sh: a gateway config
# whose one server, `echo`, is the echo fixture — a child over stdio, or `http-echo` started
# here on 127.0.0.1.
#
#   echo_upstream stdio|http FIXTURE DIR   writes DIR/gateway.toml; for http, starts the
#                                          fixture and sets fixture_pid (the caller stops
#                                          it) and fixture_address (its HOST:PORT)

echo_upstream() {
    local upstream=$1 fixture=$2 dir=$3 address
    if [[ $upstream == stdio ]]; then
        printf '[servers.echo]\ncommand = "%s"\nargs = ["echo"]\n' "$(realpath "$fixture")" > "$dir/gateway.toml"
        return
    fi
    "$fixture" http-echo > "$dir/fixture.out" 2>&1 &
    fixture_pid=$!
    for _ in $(seq 50); do grep -q "listening on" "$dir/fixture.out" && break; sleep 0.1; done
    address=$(sed -n 's/^listening on //p' "$dir/fixture.out")
    [[ -n $address ]] || { echo "the HTTP fixture did not start: $(cat "$dir/fixture.out")" >&2; exit 1; }
    printf '[servers.echo]\ntransport = "http"\nurl = "http://%s/mcp"\n' "$address" > "$dir/gateway.toml"
    fixture_address=$address
}
