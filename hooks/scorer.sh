#!/bin/sh
# session-scorer's Claude Code plugin: find the `scorer` command and run it.
#
#   scorer.sh hook EVENT   the hooks (hooks.json): hand the payload on stdin to
#                          `scorer hook`, which answers at once and scores in the
#                          background. Prints nothing, always exits 0.
#   scorer.sh ARGS...      the slash commands: run `scorer ARGS...` and show its output.
#
# `scorer` is looked for in $SCORER_BIN, on PATH, in ~/.local/bin (pipx and
# `pip install --user`; apps started from a desktop often have a short PATH), in the
# plugin's own .venv, and as a module of python3. When it is nowhere, the hooks say so
# once in the scorer's log (logs/hook.log in its data dir) and the commands print how to
# install it.

root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)

hook_event=""
if [ "$1" = "hook" ] && [ $# -eq 2 ]; then
    hook_event=$2
    # Cheap refusals before any Python starts: the kill switch, and Stop (which fires
    # after every turn) unless it was asked for.
    case "$SCORER_HOOK_ENABLED" in
        0 | [Ff][Aa][Ll][Ss][Ee] | [Nn][Oo] | [Oo][Ff][Ff]) exit 0 ;;
    esac
    if [ "$hook_event" = "Stop" ]; then
        case ",$(printf '%s' "${SCORER_HOOK_EVENTS:-}" | tr -d ' ')," in
            *,Stop,*) ;;
            *) exit 0 ;;
        esac
    fi
    set -- hook
fi

data_home() {
    if [ -n "$SCORER_HOME" ]; then
        printf '%s\n' "$SCORER_HOME"
    elif [ "$(uname -s 2>/dev/null)" = "Darwin" ]; then
        printf '%s\n' "$HOME/Library/Application Support/session-scorer"
    else
        printf '%s\n' "${XDG_DATA_HOME:-$HOME/.local/share}/session-scorer"
    fi
}

for candidate in "${SCORER_BIN:-}" "$(command -v scorer 2>/dev/null)" \
    "$HOME/.local/bin/scorer" "$root/.venv/bin/scorer"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && [ ! -d "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done
if command -v python3 >/dev/null 2>&1 && python3 -c 'import scorer.cli.entry' >/dev/null 2>&1; then
    exec python3 -m scorer.cli.entry "$@"
fi

hint="session-scorer is not installed, so this session was not scored: the plugin found no \`scorer\` command (looked in \$SCORER_BIN, PATH, ~/.local/bin, $root/.venv and python3). Install it with: pipx install \"$root\"  (or: pip install \"$root\"), or set SCORER_BIN to the scorer command."
if [ -z "$hook_event" ]; then
    printf '%s\n' "$hint"
    exit 1
fi
# A hook: never print into the session; say it once in the log.
cat >/dev/null 2>&1
logs="$(data_home)/logs"
if [ ! -e "$logs/.not-installed-logged" ] && mkdir -p "$logs" 2>/dev/null; then
    printf '%s %s WARNING %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$$" "$hint" >>"$logs/hook.log" 2>/dev/null
    : >"$logs/.not-installed-logged" 2>/dev/null
fi
exit 0
