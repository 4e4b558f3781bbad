"""Vendor token formats with a fixed prefix or shape, ported from gitleaks' default config.

gitleaks (github.com/gitleaks/gitleaks, MIT licence) keeps the most complete public set
of vendor secret formats; its rules are rewritten here for Python's `re` with our token
boundaries (`B` after the first literal character, so `re` keeps its fast literal scan)
and each gets the literal triggers the one-pass prefilter needs. Rules that gitleaks
writes as "keyword near a random string" are covered by our structure and entropy layers
instead (`structure.py`, `entropy.py`). Why gitleaks' formats rather than
detect-secrets' plugins: docs/security.md (measured recall, speed, false positives).
"""

from __future__ import annotations

import re

from scorer.prepare.secrets.base import B, E, SecretRule, prefixed, valued

_A = "A-Za-z0-9"
_U = r"A-Za-z0-9_\-"  # URL-safe base64


def _tok(kind: str, prefix: str, body: str, *triggers: str) -> SecretRule:
    """`prefix` then `body`, a whole token; the first character of `prefix` is literal."""
    return prefixed(kind, prefix[0] + B + prefix[1:] + body + E, *(triggers or (prefix,)))


VENDOR_RULES: tuple[SecretRule, ...] = (
    # AI and developer platforms
    _tok("anthropic_key", "sk-ant-admin01-", f"[{_U}]{{20,}}"),
    _tok("groq_key", "gsk_", f"[{_A}]{{48,}}"),
    _tok("perplexity_key", "pplx-", f"[{_A}]{{40,}}"),
    _tok("xai_key", "xai-", f"[{_A}]{{60,}}"),
    _tok("replicate_token", "r8_", f"[{_A}]{{37}}"),
    _tok("langsmith_key", "lsv2_", "(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    _tok("cohere_key", "co_", f"[{_A}]{{40}}", "co_"),
    _tok("pinecone_key", "pcsk_", f"[{_U}]{{40,}}"),
    _tok("huggingface_token", "hf_", f"[{_A}]{{30,}}"),
    _tok("github_token", "ghr_", f"[{_A}]{{36,}}"),
    _tok(
        "gitlab_token",
        "gl",
        f"(?:rt|dt|oas|cbt|imt|ptt|ft|soat|agent)-[{_U}]{{20,}}",
        "glrt-",
        "gldt-",
        "gloas-",
        "glcbt-",
        "glimt-",
        "glft-",
        "glsoat-",
        "glagent-",
    ),
    _tok("bitbucket_token", "ATBB", f"[{_A}]{{32}}"),
    _tok("atlassian_token", "ATATT", f"[{_U}=]{{20,}}"),
    _tok("atlassian_token", "ATCTT", f"[{_U}=]{{20,}}"),
    _tok("linear_key", "lin_", f"(?:api|oauth)_[{_A}]{{32,}}", "lin_api_", "lin_oauth_"),
    _tok("notion_token", "ntn_", f"[{_A}]{{40,}}"),
    _tok("postman_key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}"),
    _tok("sentry_token", "sntry", f"[su]_[{_U}+/=]{{30,}}", "sntrys_", "sntryu_"),
    _tok(
        "doppler_token",
        "dp.",
        f"(?:st|ct|sa|scim|audit|pt)\\.[{_U}.]{{30,}}",
        "dp.st.",
        "dp.ct.",
        "dp.sa.",
        "dp.scim.",
        "dp.audit.",
        "dp.pt.",
    ),
    _tok("onepassword_token", "ops_", f"ey[{_U}]{{40,}}"),
    _tok("prefect_key", "pnu_", f"[{_A}]{{36}}"),
    _tok("readme_key", "rdme_", "[a-z0-9]{70}"),
    _tok("typeform_token", "tfp_", f"[{_U}.]{{44,}}"),
    _tok("infracost_key", "ico-", f"[{_A}]{{32}}"),
    _tok("clojars_token", "CLOJARS_", "[a-z0-9]{60}"),
    _tok("rubygems_key", "rubygems_", "[a-f0-9]{48}"),
    _tok("pulumi_token", "pul-", "[a-f0-9]{40}"),
    _tok(
        "planetscale_token",
        "pscale_",
        f"(?:tkn|pw|oauth)_[{_U}.=]{{32,64}}",
        "pscale_tkn_",
        "pscale_pw_",
        "pscale_oauth_",
    ),
    prefixed(
        "terraform_token", rf"(?<![{_A}])[{_A}]{{14}}\.a{B}tlasv1\.[{_U}=]{{60,70}}{E}", "atlasv1"
    ),
    _tok(
        "grafana_token",
        "gl",
        f"(?:c_[{_A}+/]{{32,}}={{0,2}}|sa_[{_A}]{{32}}_[a-fA-F0-9]{{8}})",
        "glc_",
        "glsa_",
    ),
    _tok("flyio_token", "fo1_", f"[{_U}]{{43}}"),
    _tok("flyio_token", "fm", f"[12][ar]?_[{_U}+/=]{{100,}}", "fm1", "fm2_"),
    _tok("dockerhub_token", "dckr_", f"(?:pat|oat)_[{_U}]{{27,}}", "dckr_pat_", "dckr_oat_"),
    _tok("netlify_token", "nf", f"[pcu]_[{_A}]{{36,}}", "nfp_", "nfc_", "nfu_"),
    _tok("buildkite_token", "bkua_", "[a-f0-9]{40}"),
    _tok("circleci_token", "CCIPAT_", f"[{_A}]{{22}}_[a-f0-9]{{40}}"),
    _tok("sonar_token", "sq", "[apu]_[a-f0-9]{40}", "sqa_", "sqp_", "squ_"),
    _tok("supabase_token", "sb", "p_[a-f0-9]{40}", "sbp_"),
    _tok("supabase_token", "sb_secret_", f"[{_U}]{{20,}}"),
    _tok("vercel_token", "vc", f"[pkira]_[{_A}]{{24,}}", "vcp_", "vck_", "vci_", "vcr_", "vca_"),
    _tok("npm_token", "npm_", f"[{_A}]{{36}}"),
    _tok("nuget_key", "oy2", "[a-z0-9]{43}"),
    _tok("crates_token", "cio", f"[{_A}]{{32}}"),
    _tok("jfrog_token", "AKCp", f"[{_A}]{{69}}"),
    _tok("jfrog_token", "cmVmdGtuOjAxOj", f"[{_A}+/=]{{40,}}"),
    _tok("dynatrace_token", "dt0c01.", f"[{_A}]{{24}}\\.[{_A}]{{64}}"),
    _tok("hashicorp_token", "hvs.", f"[{_U}]{{90,}}"),
    _tok("harness_token", "pat.", f"[{_U}]{{22}}\\.[{_A}]{{24}}\\.[{_A}]{{20}}"),
    _tok(
        "tailscale_key",
        "tskey-",
        f"(?:auth|api|client|scim|webhook)-[{_A}]{{8,}}-[{_A}]{{16,}}",
        "tskey-",
    ),
    # payments, messaging, SaaS
    _tok("stripe_webhook_secret", "whsec_", f"[{_A}+/=]{{24,}}"),
    _tok(
        "square_token", "sq0", f"(?:atp|csp|idp)-[{_U}]{{22,43}}", "sq0atp-", "sq0csp-", "sq0idp-"
    ),
    _tok("square_token", "EAAA", f"[{_U}+=]{{56,}}"),
    _tok("shippo_token", "shippo_", "(?:live|test)_[a-f0-9]{40}"),
    _tok("paypal_token", "access_token$", "(?:production|sandbox)\\$[a-z0-9]{16}\\$[a-f0-9]{32}"),
    _tok("flutterwave_key", "FLW", "(?:SECK|PUBK)_TEST-[a-h0-9]{32}-X", "FLWSECK", "FLWPUBK"),
    _tok("mailgun_key", "key-", "[a-f0-9]{32}"),
    SecretRule(
        "mailchimp_key",
        re.compile(rf"(?<![a-f0-9])[a-f0-9]{{32}}-u{B}s\d{{1,2}}{E}"),
        ("-us",),
        back=33,
    ),
    _tok("sendinblue_key", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _tok("mailersend_token", "mlsn.", "[a-f0-9]{64}"),
    _tok("facebook_token", "EAA", f"[{_A}]{{100,}}", "EAAC", "EAAG", "EAAB", "EAAE", "EAAI"),
    _tok("twitter_bearer", "AAAAAAAAAAAAAAAAAAAAA", f"[{_A}%]{{30,}}"),
    _tok(
        "newrelic_key", "NR", f"(?:AK|II|JS|AA)-[{_A}]{{20,}}", "NRAK-", "NRII-", "NRJS-", "NRAA-"
    ),
    _tok("mapbox_token", "sk.", f"eyJ[{_U}]{{20,}}\\.[{_U}]{{20,}}", "sk.eyJ"),
    _tok("figma_token", "figd_", f"[{_U}]{{40,}}"),
    _tok("dropbox_token", "sl.", f"[{_U}=]{{130,}}"),
    _tok("contentful_token", "CFPAT-", f"[{_U}]{{43}}"),
    _tok("shopify_token", "shpss_", "[a-fA-F0-9]{32}"),
    _tok("heroku_key", "HRKU-", f"[{_U}]{{40,}}"),
    _tok("alibaba_key", "LTAI", f"[{_A}]{{20}}"),
    _tok("scalingo_token", "tk-us-", f"[{_U}]{{48}}"),
    _tok("easypost_token", "EZ", f"[AT]K[{_A}]{{54}}", "EZAK", "EZTK"),
    _tok("duffel_token", "duffel_", f"(?:test|live)_[{_U}=]{{43}}"),
    _tok("frameio_token", "fio-u-", f"[{_U}=]{{64}}"),
    _tok("lob_key", "live_", "[a-f0-9]{35}", "live_"),
    prefixed("azure_ad_secret", rf"(?<![{_A}_~.-])[{_A}_~.]{{3}}\dQ~[{_A}_~.-]{{31,34}}{E}", "Q~"),
    prefixed(
        "discord_webhook",
        r"https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]+",
        "/api/webhooks/",
    ),
    prefixed(
        "zapier_webhook", r"https://hooks\.zapier\.com/hooks/catch/\d+/\w+/?", "hooks.zapier.com"
    ),
    prefixed(
        "teams_webhook",
        r"https://[\w.-]+\.webhook\.office\.com/webhookb2/[\w@/-]{40,}",
        ".webhook.office.com",
    ),
    # a Discord bot token: three dot-separated base64 parts, the first the bot's id
    valued(
        "discord_token",
        rf"(?:Bot|bot|BOT|[Dd]iscord[\w.\"' :=-]{{0,30}}?)\s*(?P<value>[MNO][{_U}]{{23,27}}\.[{_U}]{{6,7}}\.[{_U}]{{27,40}}){E}",
        ("Bot ", "bot ", "BOT", "iscord", "ISCORD"),
        keep=None,
    ),
    valued("google_oauth_token", rf"ya29\.(?P<value>[{_U}]{{20,}})", ("ya29.",), keep=None),
)
