#!/bin/sh
# session-scorer's Claude Code plugin: find the `scorer` command (or install it) and run it.
#
#   scorer.sh hook EVENT        the hooks (hooks.json): hand the payload on stdin to
#                               `scorer hook`, which answers at once and scores in the
#                               background. Prints nothing, always exits 0.
#   scorer.sh score [--rescore] /score: score the session that runs the command
#                               (Claude Code's CLAUDE_CODE_SESSION_ID) and show its card.
#   scorer.sh ARGS...           the other slash commands: `scorer ARGS...`.
#
# `scorer` is looked for in $SCORER_BIN, on PATH, in ~/.local/bin (pipx and
# `pip install --user`; apps started from a desktop often have a short PATH), in the
# checkout's .venv when the plugin runs from a checkout, in the scorer's own folder
# ($SCORER_HOME/venv, where it installs itself) and as a module of python3. When it is
# nowhere, bootstrap.py installs it into that folder: in the background for a hook (the
# session is scored when the install is done), in front of a slash command with one line
# saying so. The command lines in commands/*.md use only Claude Code's own substitutions,
# so they pass its default permission check; every path is computed here.

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
elif [ "$1" = "score" ]; then
    shift
    set -- hook --now --current ${CLAUDE_CODE_SESSION_ID:+--session-id "$CLAUDE_CODE_SESSION_ID"} "$@"
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

own="$(data_home)/venv"
if [ ! -e "$own/.installed" ]; then
    own=""  # not there, or an install still under way
fi
for candidate in "${SCORER_BIN:-}" "$(command -v scorer 2>/dev/null)" \
    "$HOME/.local/bin/scorer" "$root/../.venv/bin/scorer" "${own:+$own/bin/scorer}"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && [ ! -d "$candidate" ]; then
        exec "$candidate" "$@"
    fi
done
if command -v python3 >/dev/null 2>&1; then
    if python3 -c 'import scorer.cli.entry' >/dev/null 2>&1; then
        exec python3 -m scorer.cli.entry "$@"
    fi
    # Not installed: install it into its own folder (bootstrap.py says how and where).
    exec python3 "$root/hooks/bootstrap.py" ${hook_event:+--hook} -- "$@"
fi

hint="session-scorer is not installed, and there is no python3 to install it with: install Python 3.11 or later and then session-scorer (pipx install session-scorer's checkout), or set SCORER_BIN to the scorer command."
if [ -z "$hook_event" ]; then
    printf '%s\n' "$hint"
    exit 0  # a slash command shows the line; a failed one shows a raw shell error
fi
# A hook: never print into the session; say it once in the log.
cat >/dev/null 2>&1
logs="$(data_home)/logs"
if [ ! -e "$logs/.not-installed-logged" ] && mkdir -p "$logs" 2>/dev/null; then
    printf '%s %s WARNING %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$$" "$hint" >>"$logs/hook.log" 2>/dev/null
    : >"$logs/.not-installed-logged" 2>/dev/null
fi
exit 0
