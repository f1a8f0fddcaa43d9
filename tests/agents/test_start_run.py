"""manage.py start_run: a run from the shell, or a clear refusal that stores nothing."""

import pytest
from django.core.management import CommandError, call_command

from approvals.models import Run

pytestmark = pytest.mark.django_db


def test_it_starts_a_run_of_the_agent_on_the_request(capsys, shop, django_user_model):
    django_user_model.objects.create_user("rita")
    call_command("start_run", "Look up order A-1002", "--agent", "orders", "--user", "rita")

    run = Run.objects.get()
    assert (run.agent, run.request, run.requested_by.username) == ("orders", "Look up order A-1002", "rita")
    assert f"Started run {run.pk}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("request_text", "problem"), [("Refund\x00", "NUL character"), ("Refund \udcff", "unpaired surrogate")]
)
def test_a_request_that_cannot_be_stored_is_refused_by_name(request_text, problem):
    with pytest.raises(CommandError, match=f"The request contains an? {problem}"):
        call_command("start_run", request_text)
    assert not Run.objects.exists()


def test_an_unknown_user_is_refused():
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("start_run", "Look up order A-1002", "--user", "nobody")
    assert not Run.objects.exists()
