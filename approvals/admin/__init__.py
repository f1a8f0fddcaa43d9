"""The admin: the record, read-only for everyone, and the only view auditors need.

pages.py registers the record's pages (runs, calls, decisions, the audit trail); base.py is the shape they
share, filters.py what their lists accept from the URL, search.py what an auditor types into the search box,
readonly.py the mixin of pages nobody changes, auditors.py the auditors' look. The policy rules' and turn rules'
pages live with the policy (approvals/policy/admin.py). The admin site itself is in approvals/apps.py.

Django imports this module to register the admin pages: it imports the modules that register them."""

from approvals.admin import pages  # noqa: F401  (runs, calls, decisions, the audit trail)
from approvals.policy import admin as policy_admin  # noqa: F401  (policy rules, tool settings, turn rules)
