"""Tenants: tokens and namespaces, and the audit trail per tenant."""
