"""Sphinx plugins for a Django-like documentation tree (as Django's docs/_ext/djangodocs.py)."""


def setup(app):
    app.add_crossref_type(
        directivename="setting",
        rolename="setting",
        indextemplate="pair: %s; setting",
    )
    app.add_object_type(
        directivename="django-admin",
        rolename="djadmin",
        indextemplate="pair: %s; django-admin command",
        parse_node=parse_django_admin_node,
    )
    return {"parallel_read_safe": True}


def parse_django_admin_node(env, sig, signode):
    command = sig.split(" ")[0]
    signode += command
    return command
