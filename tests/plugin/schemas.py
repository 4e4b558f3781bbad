"""JSON Schemas of the Claude Code plugin files, written from their documentation.

Sources (read from anthropics/claude-plugins-official@340e33a, plugin-dev skill):
- `plugins/plugin-dev/skills/plugin-structure/references/manifest-reference.md`:
  plugin.json (name kebab-case and required; semver version; author object or string;
  component paths relative, starting with `./`, no `..`);
- `plugins/plugin-dev/skills/hook-development/SKILL.md` and
  `scripts/validate-hook-schema.sh`: hooks/hooks.json (the plugin wrapper
  `{"description"?, "hooks": {Event: [{"matcher"?, "hooks": [...]}]}}`, the event names,
  `type` command|prompt, `command` for command hooks, `timeout` in seconds up to 600);
- `plugins/plugin-dev/skills/command-development/references/frontmatter-reference.md`
  and `.github/scripts/validate-frontmatter.ts`: command frontmatter (`description`
  required by the repo's validator; `allowed-tools`, `argument-hint`, `model`);
- `.claude-plugin/marketplace.json` of that repository and of
  langfuse/claude-observability-plugin: marketplace (name, owner.name, plugins[] with
  name and source: a relative folder such as `"./plugin"`, which is all an install copies,
  or `"./"` for a repository that is the plugin itself).
"""

from __future__ import annotations

KEBAB = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
SEMVER = r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
RELATIVE = r"^\./(?!.*(^|/)\.\.(/|$))[^\\]*$"
EVENTS = [
    "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop",
    "SessionStart", "SessionEnd", "PreCompact", "Notification",
]  # fmt: skip

_AUTHOR = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "email": {"type": "string"},
                "url": {"type": "string"},
            },
            "additionalProperties": False,
        },
    ]
}
_PATHS = {
    "oneOf": [
        {"type": "string", "pattern": RELATIVE},
        {"type": "array", "items": {"type": "string", "pattern": RELATIVE}, "minItems": 1},
    ]
}

PLUGIN = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": KEBAB},
        "version": {"type": "string", "pattern": SEMVER},
        "description": {"type": "string", "minLength": 1, "maxLength": 200},
        "author": _AUTHOR,
        "homepage": {"type": "string", "format": "uri"},
        "repository": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        "license": {"type": "string"},
        "keywords": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "commands": _PATHS,
        "agents": _PATHS,
        "hooks": {"oneOf": [{"type": "string", "pattern": RELATIVE}, {"type": "object"}]},
        "mcpServers": {"oneOf": [{"type": "string", "pattern": RELATIVE}, {"type": "object"}]},
    },
    "additionalProperties": False,
}

MARKETPLACE = {
    "type": "object",
    "required": ["name", "owner", "plugins"],
    "properties": {
        "$schema": {"type": "string"},
        "name": {"type": "string", "pattern": KEBAB},
        "description": {"type": "string"},
        "owner": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "email": {"type": "string"},
                "url": {"type": "string"},
            },
            "additionalProperties": False,
        },
        "plugins": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "source"],
                "properties": {
                    "name": {"type": "string", "pattern": KEBAB},
                    "source": {
                        "oneOf": [
                            {"type": "string", "pattern": RELATIVE},
                            {"type": "object", "required": ["source"]},
                        ]
                    },
                    "description": {"type": "string"},
                    "version": {"type": "string", "pattern": SEMVER},
                    "author": _AUTHOR,
                    "homepage": {"type": "string"},
                    "license": {"type": "string"},
                    "keywords": {"type": "array", "items": {"type": "string"}},
                    "category": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}

_HOOK = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"enum": ["command", "prompt"]},
        "command": {"type": "string", "minLength": 1},
        "prompt": {"type": "string", "minLength": 1},
        "timeout": {"type": "integer", "minimum": 1, "maximum": 600},
    },
    "allOf": [
        {"if": {"properties": {"type": {"const": "command"}}}, "then": {"required": ["command"]}},
        {"if": {"properties": {"type": {"const": "prompt"}}}, "then": {"required": ["prompt"]}},
    ],
    "additionalProperties": False,
}
HOOKS = {
    "type": "object",
    "required": ["hooks"],
    "properties": {
        "description": {"type": "string"},
        "hooks": {
            "type": "object",
            "propertyNames": {"enum": EVENTS},
            "additionalProperties": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["hooks"],
                    "properties": {
                        "matcher": {"type": "string"},
                        "hooks": {"type": "array", "minItems": 1, "items": _HOOK},
                    },
                    "additionalProperties": False,
                },
            },
        },
    },
    "additionalProperties": False,
}

COMMAND_FRONTMATTER = {
    "type": "object",
    "required": ["description"],
    "properties": {
        "description": {"type": "string", "minLength": 1, "maxLength": 80},
        "allowed-tools": {
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
        },
        "argument-hint": {"type": "string"},
        "model": {"type": "string"},
        "disable-model-invocation": {"type": "boolean"},
    },
    "additionalProperties": False,
}
