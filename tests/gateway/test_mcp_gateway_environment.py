"""An upstream MCP server started by the gateway gets only the environment its admin entry names, plus PATH:
never ReviewHub's key, database or broker, though the gateway's own process has them."""

import json
import shlex
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from mcp.client.stdio import StdioServerParameters

from gateway import services
from gateway.models import Upstream

from .mcpgateway import ROOT, McpClient, gateway_env

pytestmark = pytest.mark.django_db(transaction=True)

ENVIRON_SERVER = Path(__file__).with_name("mcp_environ_server.py")
# What the SDK's stdio client gives every server it starts (mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS).
SDK_DEFAULTS = {"HOME", "LOGNAME", "SHELL", "TERM", "USER"}


def environ_gateway(environment: str):
    gateway = services.gateway_create(name="environgw")
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ENVIRON_SERVER))}"
    Upstream.objects.create(gateway=gateway, name="environ", command=command, environment=environment)
    return gateway


def test_an_upstream_process_sees_only_what_its_entry_names_and_path_never_reviewhubs_secrets(tmp_path, settings):
    gateway = environ_gateway("SHOP_DB\nGREETING=hello from the admin\nNOT_SET_ANYWHERE")
    env = gateway_env(tmp_path) | {"SECRET_KEY": "gateway-only-" + "s" * 40, "REDIS_URL": settings.REDIS_TEST_URL}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    stdio = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_gateway", gateway.name], env=env, cwd=str(ROOT)
    )
    with McpClient(stdio) as mcp:
        result = mcp.call_tool("environment", {})

    seen = json.loads(result.content[0].text)
    assert not result.is_error
    assert seen["SHOP_DB"] == env["SHOP_DB"] and seen["GREETING"] == "hello from the admin"
    assert seen["PATH"] == env["PATH"]
    assert set(seen) - SDK_DEFAULTS == {"SHOP_DB", "GREETING", "PATH"}
    for secret in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"):
        assert secret not in seen


def test_an_entry_that_would_pass_on_one_of_reviewhubs_secrets_is_refused_naming_the_field(db):
    upstream = Upstream(gateway=services.gateway_create(name="leaky"), name="x", command="python x.py")
    upstream.environment = "SHOP_DB\nDATABASE_URL"

    with pytest.raises(ValidationError) as refused:
        upstream.full_clean()

    assert refused.value.message_dict == {
        "environment": ["Line 2: DATABASE_URL is one of ReviewHub's secrets; it is never passed on."]
    }
    upstream.environment = "SHOP_DB\nnot a name"
    with pytest.raises(ValidationError, match="Line 2: 'not a name' is not a variable name"):
        upstream.full_clean()
