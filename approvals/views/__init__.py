"""The reviewer's pages: one view per page and one per action, each thin.

A view first gets the object the user may see (get_call_for_user, get_run_for_user:
404 otherwise; approvals/access/ decides), calls one service, which checks again
that the user may act (403 otherwise), and renders one partial (htmx) or redirects
(no JavaScript). Rules live in approvals/services/ and approvals/access/.
"""
