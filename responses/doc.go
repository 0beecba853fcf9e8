// Package responses serves OpenAI's Responses API: POST /v1/responses, and
// the stored responses GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
package responses
