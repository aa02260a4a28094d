// Renders /openapi.json with Swagger UI. A separate file (not an inline script) so the page's
// Content-Security-Policy can forbid inline scripts.
window.addEventListener('DOMContentLoaded', () => {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    // The default validator badge asks a third-party service: never.
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
  });
});
