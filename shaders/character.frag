#version 300 es
// Stella's character: outfit cell + face overlays (blink, mouth), crossfaded between two outfits.
// Atlas texels are premultiplied by alpha, and so is the output.
precision highp float;

in vec2 v_cell;

uniform sampler2D u_atlas;
uniform vec4 u_cur_rect;      // atlas UV rects (u0, v0, u1, v1) of the current outfit ...
uniform vec4 u_cur_eyes;      // ... its eyes-closed overlay cell
uniform vec4 u_cur_mouth;     // ... and its mouth-open overlay cell
uniform vec4 u_prev_rect;     // the same three for the outfit being faded out
uniform vec4 u_prev_eyes;
uniform vec4 u_prev_mouth;
uniform vec4 u_eyes_region;   // face regions inside a cell, in cell coordinates (0..1)
uniform vec4 u_mouth_region;
uniform float u_progress;     // crossfade: 0 = previous outfit, 1 = current outfit
uniform float u_mouth;        // mouth openness, 0..1
uniform float u_blink;        // 0 = eyes open, 1 = closed

out vec4 frag_color;

// Blend an overlay cell over `base`, only inside `region`. The texture() call is made for every
// fragment (no per-fragment branch) so mipmap derivatives stay well defined.
vec4 overlay(vec4 base, vec4 cell, vec4 region, vec2 p, float amount) {
    vec2 q = clamp((p - region.xy) / (region.zw - region.xy), 0.0, 1.0);
    vec4 over = texture(u_atlas, mix(cell.xy, cell.zw, q));
    vec2 inside = step(region.xy, p) * step(p, region.zw);
    return mix(base, over, amount * inside.x * inside.y);
}

// Branches below depend on uniforms only (the same for every fragment): they skip texture work
// that cannot change the result, which halves the cost on software GL when nothing animates.
vec4 character(vec4 cell, vec4 eyes, vec4 mouth, vec2 p) {
    vec4 color = texture(u_atlas, mix(cell.xy, cell.zw, p));
    if (u_blink > 0.0) {
        color = overlay(color, eyes, u_eyes_region, p, u_blink);
    }
    if (u_mouth > 0.0) {
        color = overlay(color, mouth, u_mouth_region, p, u_mouth);
    }
    return color;
}

void main() {
    vec4 color = character(u_cur_rect, u_cur_eyes, u_cur_mouth, v_cell);
    if (u_progress < 1.0) {
        color = mix(character(u_prev_rect, u_prev_eyes, u_prev_mouth, v_cell), color, u_progress);
    }
    frag_color = color;
}
