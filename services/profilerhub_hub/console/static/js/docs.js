// /api/v1/docs: Swagger UI over the hub's OpenAPI document, from the vendored copy (no CDN).
// "Try it out" sends the browser's console session cookie; state-changing calls also need the
// CSRF token, so they work with a pasted token ("Authorize") rather than the session.
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({ url: document.body.dataset.spec, dom_id: "#swagger-ui", deepLinking: true });
});
